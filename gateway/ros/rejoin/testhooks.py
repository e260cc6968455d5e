"""Test-only hooks, installed only when the gateway starts with DIAG_GATEWAY_TEST_HOOKS=1.

- SIGUSR1 re-joins DDS now (RosBridge.rejoin; neither `ros.rejoin.enabled` nor the interval
  apply): tests/integration/test_rejoin_soak.py forces its rejoins with it.
- SIGUSR2 makes the gateway's DDS participant deaf for real: every Fast DDS receive thread of
  the process (`dds.udp.*`, `dds.shm.*` but the shared-memory watchdog) is parked in pause()
  inside a handler of a real-time signal, so nothing the participant is sent is processed
  (samples, requests, discovery, announcements); what it sends still goes out. The next rejoin
  wakes the parked threads (another real-time signal) before the old participant is closed,
  whose closing joins them.
Neither signal is used otherwise: without the variable both keep their default action.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import os
import signal
from typing import Any

log = logging.getLogger(__name__)
ENV = "DIAG_GATEWAY_TEST_HOOKS"
# Real-time signals (glibc keeps SIGRTMIN's first two for itself; signal.SIGRTMIN is past them).
PARK_SIGNAL = signal.SIGRTMIN + 6
WAKE_SIGNAL = signal.SIGRTMIN + 7
# DIAG_GATEWAY_TEST_PARK=samples parks the receive threads of user data only, over shared
# memory and UDP (samples stop, discovery goes on): those of the domain's user-data unicast
# ports (RTPS: 7400 + 250 * domain + 11 + 2 * participant id).
RECEIVE_THREADS = ("dds.udp.", "dds.shm.")
NOT_RECEIVING = ("dds.shm.wdog",)
USER_PORTS = range(11, 11 + 2 * 120, 2)  # offsets from the domain's base port
_SIGHANDLER = ctypes.CFUNCTYPE(None, ctypes.c_int)


def enabled() -> bool:
    """Whether the test hooks are asked for."""
    return os.environ.get(ENV, "") == "1"


def _parked_port(comm: str, domain: int | None) -> bool:
    """Whether a receive thread is one to park: any, or with PARK=samples only those of the
    domain's user-data ports (its name ends with the port)."""
    if os.environ.get("DIAG_GATEWAY_TEST_PARK") != "samples":
        return True
    if domain is None:
        return False
    try:
        port = int(comm.rsplit(".", 1)[1])
    except (IndexError, ValueError):
        return False
    return port - (7400 + 250 * domain) in USER_PORTS


def receive_threads(domain: int | None = None) -> list[int]:
    """Thread ids of this process's Fast DDS receive threads (to park)."""
    tids = []
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm.startswith(RECEIVE_THREADS) and comm not in NOT_RECEIVING and \
                _parked_port(comm, domain):
            tids.append(int(tid))
    return tids


class TestHooks:
    """The two signal hooks of one gateway process."""

    def __init__(self, bridge: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.bridge = bridge
        self.loop = loop
        self.parked: list[int] = []
        self.task: asyncio.Task[Any] | None = None
        libc = ctypes.CDLL(None, use_errno=True)
        self._tgkill = libc.tgkill
        # pause() as the handler: the thread the signal is sent to waits in it until another
        # handler runs in that thread (the wake signal's, which does nothing: getpid()).
        libc.signal.restype = ctypes.c_void_p
        libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
        for signum, fn in ((PARK_SIGNAL, libc.pause), (WAKE_SIGNAL, libc.getpid)):
            libc.signal(signum, ctypes.cast(fn, ctypes.c_void_p))
        loop.add_signal_handler(signal.SIGUSR1, self._rejoin)
        loop.add_signal_handler(signal.SIGUSR2, self.park)
        bridge.on_rejoin(self.wake)

    def _rejoin(self) -> None:
        if self.task is not None and not self.task.done():
            return
        log.warning("test hook: re-joining DDS now")
        self.task = self.loop.create_task(self._run_rejoin())

    async def _run_rejoin(self) -> None:
        hearing = getattr(self.bridge, "hearing", None)
        try:
            took = await self.bridge.rejoin()
        except Exception:
            log.exception("test hook: rejoin failed")
            return
        if hearing is not None:
            hearing.rejoined_by_hook(took)

    def park(self) -> None:
        """Park every Fast DDS receive thread (the participant hears nothing from here on)."""
        pid = os.getpid()
        tids = receive_threads(getattr(self.bridge, "domain_id", None))
        for tid in tids:
            self._tgkill(pid, tid, PARK_SIGNAL)
        self.parked.extend(tids)
        log.warning("test hook: %d DDS receive threads parked: the participant is deaf",
                    len(tids))

    def wake(self) -> None:
        """Wake the parked threads (a rejoin, before the old participant is closed)."""
        pid = os.getpid()
        for tid in self.parked:
            self._tgkill(pid, tid, WAKE_SIGNAL)
        if self.parked:
            log.warning("test hook: %d DDS receive threads woken", len(self.parked))
        self.parked.clear()


def install(bridge: Any, loop: asyncio.AbstractEventLoop) -> TestHooks | None:
    """The hooks when DIAG_GATEWAY_TEST_HOOKS=1, else None (nothing installed)."""
    if not enabled():
        return None
    log.warning("test hooks on (%s=1): SIGUSR1 re-joins DDS, SIGUSR2 makes it deaf", ENV)
    return TestHooks(bridge, loop)
