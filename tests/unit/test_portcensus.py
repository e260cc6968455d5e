"""Local DDS participants counted from the UDP ports bound on this host."""

from __future__ import annotations

import socket

from gateway.ros import portcensus

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


def test_a_domain_whose_ports_meet_the_ephemeral_range_is_not_counted() -> None:
    ports = {portcensus.port_range(150)[0]}
    assert portcensus.count(ports, 150, ephemeral=(32768, 60999)) is None
    assert portcensus.count(ports, 150, ephemeral=None) == 1
    assert portcensus.count(set(), 20, ephemeral=(32768, 60999)) == 0


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


def test_only_localhost_discovery_without_peers_is_a_closed_world() -> None:
    assert portcensus.closed_world({"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"})
    assert portcensus.closed_world({"ROS_LOCALHOST_ONLY": "1"})
    assert not portcensus.closed_world({})
    assert not portcensus.closed_world({"ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"})
    assert not portcensus.closed_world({"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
                                        "ROS_STATIC_PEERS": "192.168.0.7"})
    assert not portcensus.closed_world({"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
                                        "ROS_DISCOVERY_SERVER": "127.0.0.1:11811"})
