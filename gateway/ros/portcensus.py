"""Local DDS participants of a domain, counted from the UDP ports bound on this host.

Every RTPS participant binds its metatraffic unicast port, PB + DG * domain + d1 + PG * id
(the RTPS standard's port mapping, 7400 + 250 * domain + 10 + 2 * id; Fast DDS and Cyclone DDS
both use it), for the lowest participant id free on the host. So the number of those ports
bound in /proc/net/udp and udp6 is the number of participants of the domain on this host, the
gateway's own included, whether or not DDS discovery has told the gateway about them yet: a
lower bound for discovery to reach before it can be complete (discovery/readiness.py).

With ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST (the gateway's default) and neither static peers
nor a discovery server, no participant but these can ever be discovered: the count is then
the whole world (closed_world()).

Where the domain's port range meets the kernel's ephemeral ports (domains above about 100),
any socket's port could sit in it: there a participant counts only when its user unicast port
(d3 = 11, the next port) is bound too. A lone ephemeral socket on a participant's port is not
counted; an ephemeral socket has no reason to sit on the port beside another.

No count (None, with the reason) when the ports cannot be read (not Linux) or when the
gateway's own ports are not among them (a transport without UDP).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping

PORT_BASE = 7400  # PB
DOMAIN_GAIN = 250  # DG
PARTICIPANT_GAIN = 2  # PG
METATRAFFIC_UNICAST = 10  # d1
USER_UNICAST_OFFSET = 1  # d3 - d1: a participant's user unicast port is the next one
MAX_PARTICIPANTS = 120  # ids a domain's 250 ports have room for
PROC_FILES = ("/proc/net/udp", "/proc/net/udp6")
EPHEMERAL_FILE = "/proc/sys/net/ipv4/ip_local_port_range"


def port_range(domain_id: int) -> range:
    """The metatraffic unicast ports of participants 0..119 of the domain."""
    first = PORT_BASE + DOMAIN_GAIN * domain_id + METATRAFFIC_UNICAST
    return range(first, first + PARTICIPANT_GAIN * MAX_PARTICIPANTS, PARTICIPANT_GAIN)


def bound_ports(lines: Iterable[str]) -> set[int]:
    """Local ports of the sockets listed in /proc/net/udp-format lines (header skipped)."""
    ports = set()
    for line in lines:
        fields = line.split()
        if len(fields) < 2 or ":" not in fields[1]:
            continue
        try:
            ports.add(int(fields[1].rsplit(":", 1)[1], 16))
        except ValueError:
            continue  # the header line
    return ports


def count(ports: set[int], domain_id: int, ephemeral: tuple[int, int] | None = None) -> int:
    """Participants of the domain among the bound ports (pairs of ports where the range
    meets the ephemeral ports)."""
    candidates = port_range(domain_id)
    if ephemeral is not None and candidates.start <= ephemeral[1] and \
            ephemeral[0] <= candidates[-1] + USER_UNICAST_OFFSET:
        return sum(1 for p in candidates if p in ports and p + USER_UNICAST_OFFSET in ports)
    return sum(1 for p in candidates if p in ports)


@functools.cache  # read once: the starting polls ask every 50 ms
def _ephemeral() -> tuple[int, int] | None:
    try:
        with open(EPHEMERAL_FILE) as f:
            low, high = f.read().split()[:2]
        return int(low), int(high)
    except (OSError, ValueError):
        return None


def census(domain_id: int) -> tuple[int | None, str | None]:
    """(participants of the domain on this host, the gateway's own included; None when
    unknown, with the reason). Blocking: file reads; call from a worker thread."""
    ports: set[int] = set()
    read = False
    for path in PROC_FILES:
        try:
            with open(path) as f:
                ports |= bound_ports(f)
            read = True
        except OSError:
            continue
    if not read:
        return None, f"the bound UDP ports cannot be read ({' and '.join(PROC_FILES)})"
    found = count(ports, domain_id, _ephemeral())
    if not found:  # not even the gateway's own port: no UDP here
        first = port_range(domain_id).start
        return None, (f"no participant port of domain {domain_id} ({first}, {first + 2}, ...) "
                      "is bound, not even the gateway's own: DDS does not use UDP here")
    return found, None


def local_participants(domain_id: int) -> int | None:
    """Participants of the domain on this host, the gateway's own included; None when unknown."""
    return census(domain_id)[0]


def closed_world(env: Mapping[str, str]) -> bool:
    """Whether only this host's participants can be discovered (ROS 2's discovery settings)."""
    localhost = env.get("ROS_AUTOMATIC_DISCOVERY_RANGE", "").upper() == "LOCALHOST" or \
        env.get("ROS_LOCALHOST_ONLY", "") == "1"
    return localhost and not env.get("ROS_STATIC_PEERS", "").strip() and \
        not env.get("ROS_DISCOVERY_SERVER", "").strip()
