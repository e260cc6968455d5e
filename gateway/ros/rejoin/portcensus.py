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
import os
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


def participant_sockets(lines: Iterable[str], domain_id: int,
                        ephemeral: tuple[int, int] | None = None) -> dict[int, int]:
    """Socket inode of each participant port of the domain bound in /proc/net/udp-format lines
    (port -> inode; pairs of ports where the range meets the ephemeral ports)."""
    inodes: dict[int, int] = {}
    for line in lines:
        fields = line.split()
        if len(fields) < 10 or ":" not in fields[1]:
            continue
        try:
            inodes[int(fields[1].rsplit(":", 1)[1], 16)] = int(fields[9])
        except ValueError:
            continue  # the header line
    candidates = port_range(domain_id)
    paired = ephemeral is not None and candidates.start <= ephemeral[1] and \
        ephemeral[0] <= candidates[-1] + USER_UNICAST_OFFSET
    return {p: inodes[p] for p in candidates if p in inodes
            and (not paired or p + USER_UNICAST_OFFSET in inodes)}


def socket_owners(inodes: set[int], known: dict[int, int]) -> dict[int, int]:
    """The process holding each socket inode (inode -> pid), from /proc/*/fd. `known`: inodes
    found before (kept while they hold); /proc is walked only for inodes not found yet.
    Blocking; call from a worker thread, and only while owners are wanted."""
    found = {i: pid for i, pid in known.items() if i in inodes and os.path.exists(f"/proc/{pid}")}
    wanted = {f"socket:[{i}]" for i in inodes if i not in found}
    if not wanted:
        return found
    with os.scandir("/proc") as procs:
        for entry in procs:
            if not entry.name.isdigit():
                continue
            try:
                fds = os.scandir(f"/proc/{entry.name}/fd")
            except OSError:  # gone, or not ours to read
                continue
            with fds:
                for fd in fds:
                    try:
                        link = os.readlink(fd.path)
                    except OSError:
                        continue
                    if link in wanted:
                        found[int(link[8:-1])] = int(entry.name)
                        wanted.discard(link)
            if not wanted:
                break
    return found


def process_state(pid: int) -> str | None:
    """The state letter of /proc/<pid>/stat (R, S, D, T stopped, t traced, Z, ...); None: gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    rest = stat[stat.rfind(")") + 1:].split()
    return rest[0] if rest else None


def participant_owners(domain_id: int, known: dict[int, int]) -> dict[int, str]:
    """The processes holding a participant port of the domain on this host, with their state
    (pid -> state letter). `known` (inode -> pid) is updated in place. Blocking."""
    inodes: dict[int, int] = {}
    for path in PROC_FILES:
        try:
            with open(path) as f:
                inodes.update(participant_sockets(f, domain_id, _ephemeral()))
        except OSError:
            continue
    owners = socket_owners(set(inodes.values()), known)
    known.clear()
    known.update(owners)
    states: dict[int, str] = {}
    for pid in set(owners.values()):
        state = process_state(pid)
        if state is not None:
            states[pid] = state
    return states
