"""The processes holding the participant ports of a domain (ros/rejoin/portcensus.py, /proc)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

from gateway.ros.rejoin import portcensus

DOMAIN = 99  # below the ephemeral ports; participant id 110 of it is free here (tests/domains.py
# gives domain 99 to no test module)

UDP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
 1: 00000000:{a:04X} 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 111 2
 2: 00000000:{b:04X} 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 222 2
 3: 00000000:{c:04X} 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 333 2
"""


def test_participant_sockets_are_read_with_their_inodes() -> None:
    first = portcensus.port_range(3)[0]
    lines = UDP.format(a=first, b=first + 1, c=first + 4).splitlines()
    assert portcensus.participant_sockets(lines, 3) == {first: 111, first + 4: 333}
    # where the range meets the ephemeral ports a port counts only with its neighbour bound
    assert portcensus.participant_sockets(lines, 3, ephemeral=(1024, 65535)) == {first: 111}


def test_the_owner_of_a_bound_participant_port_and_its_state() -> None:
    port = portcensus.port_range(DOMAIN)[110]
    holder = subprocess.Popen(
        [sys.executable, "-c", "import socket, sys; s = socket.socket(socket.AF_INET, "
         f"socket.SOCK_DGRAM); s.bind(('127.0.0.1', {port})); print('BOUND', flush=True); "
         "sys.stdin.readline()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "BOUND"
        known: dict[int, int] = {}
        # running or sleeping (it may not have reached its read yet), not stopped
        assert portcensus.participant_owners(DOMAIN, known).get(holder.pid) in ("R", "S")
        assert holder.pid in known.values()  # the inode found is kept
        os.kill(holder.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 10
        while portcensus.process_state(holder.pid) != "T":
            assert time.monotonic() < deadline, "the holder did not stop"
            time.sleep(0.01)
        assert portcensus.participant_owners(DOMAIN, known).get(holder.pid) == "T"
        os.kill(holder.pid, signal.SIGCONT)
    finally:
        os.kill(holder.pid, signal.SIGCONT)
        holder.stdin.close()
        holder.wait(10)
        holder.stdout.close()
    assert holder.pid not in portcensus.participant_owners(DOMAIN, known)
    assert portcensus.process_state(holder.pid) is None


def test_socket_owners_finds_our_own_socket() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        inode = os.stat(f"/proc/self/fd/{s.fileno()}").st_ino
        assert portcensus.socket_owners({inode}, {}) == {inode: os.getpid()}
