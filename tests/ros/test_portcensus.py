"""Local DDS participants counted from the UDP ports bound on this host."""

from __future__ import annotations

import socket

import pytest

from gateway.ros.rejoin import portcensus

HEADER = ("   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
          "timeout inode ref pointer drops")


def line(port: int, addr: str = "00000000") -> str:
    """A /proc/net/udp line of a socket bound to addr:port."""
    return (f"  12: {addr}:{port:04X} 00000000:0000 07 00000000:00000000 00:00000000 "
            "00000000     0        0 123 2 0000000000000000 0")


def test_the_ports_follow_the_rtps_port_mapping() -> None:
    ports = portcensus.port_range(0)
    assert ports[0] == 7410 and ports[1] == 7412 and len(ports) == 120
    assert portcensus.port_range(93)[0] == 7400 + 250 * 93 + 10


def test_participants_are_the_even_metatraffic_ports_of_the_domain() -> None:
    base = portcensus.port_range(7)[0]
    lines = [HEADER, line(base), line(base + 1), line(base + 2), line(base + 6, "0100007F"),
             line(base - 250), line(40000)]  # user-traffic port, another domain, any socket
    ports = portcensus.bound_ports(lines)
    assert base + 1 in ports and 40000 in ports
    assert portcensus.count(ports, 7) == 3
    assert portcensus.count(ports, 6) == 1  # base - 250: domain 6's participant 0


def test_where_the_ports_meet_the_ephemeral_range_only_port_pairs_count() -> None:
    first = portcensus.port_range(150)[0]
    # participants 0 and 3 (metatraffic and user unicast ports); lone ephemeral sockets on
    # participant 1's metatraffic port and participant 5's user port
    ports = {first, first + 1, first + 6, first + 7, first + 2, first + 11}
    assert portcensus.count(ports, 150, ephemeral=(32768, 60999)) == 2
    assert portcensus.count(ports, 150, ephemeral=None) == 3
    assert portcensus.count(set(), 20, ephemeral=(32768, 60999)) == 0


def test_a_census_that_cannot_run_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(portcensus, "PROC_FILES", ("/nonexistent/udp",))
    found, why = portcensus.census(150)
    assert found is None and why is not None and "/nonexistent/udp" in why


def test_sockets_bound_here_are_counted() -> None:
    domain = 13  # below every test and bench domain
    ports = portcensus.port_range(domain)
    socks = []
    try:
        for i in (0, 3, 7):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", ports[i]))
            socks.append(s)
        assert portcensus.local_participants(domain) == 3
    finally:
        for s in socks:
            s.close()
    assert portcensus.local_participants(domain) is None  # not even the gateway's own port
    found, why = portcensus.census(domain)
    assert found is None and why is not None and "not even the gateway's own" in why


def test_only_localhost_discovery_without_peers_is_a_closed_world() -> None:
    assert portcensus.closed_world({"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"})
    assert portcensus.closed_world({"ROS_LOCALHOST_ONLY": "1"})
    assert not portcensus.closed_world({})
    assert not portcensus.closed_world({"ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"})
    assert not portcensus.closed_world({"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
                                        "ROS_STATIC_PEERS": "192.168.0.7"})
    assert not portcensus.closed_world({"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
                                        "ROS_DISCOVERY_SERVER": "127.0.0.1:11811"})
