"""Service clients answered on the event loop: DDS wakes the loop's selector through an eventfd.

rcl lets a client name a C function that the middleware's listener thread calls on each new
response (`rcl_client_set_on_new_response_callback`, the hook rclpy's EventsExecutor uses).
Here that function is glibc's `eventfd_write` and its user data the eventfd itself, so a
response costs the listener thread one counter increment and no Python at all; the loop,
whose selector watches the eventfd, takes every waiting response (`take_response`) and
completes the callers' futures. No executor thread, no GIL hand-off, no wait set: about half
the CPU per call of a client spun by rclpy's EventsExecutor (bench/ops.py).

The client is a bare rcl client (not in its node's client list), so no executor on the node
ever takes its responses. A call whose budget runs out is forgotten; its late response is
taken and dropped.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import math
import os
import re
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

_RCL_RET_OK = 0
# A server seen matched is taken as still there for this long: rcl's check walks the whole
# graph cache (its cost grows with the robot's graph), and a server that leaves just after
# any check leaves its calls to their budget either way.
READY_HOLD_S = 0.1
_LIBRCL = re.compile(r"/librcl\.so(\.\d+)*$")


class _Wakeup:
    """rcl's set-callback entry point and the address of eventfd_write (one per process)."""

    def __init__(self) -> None:
        # rclpy's extension loaded librcl privately: find the mapped file, open the same copy.
        with open("/proc/self/maps", encoding="utf-8") as maps:
            path = next((line.split()[-1] for line in maps
                         if _LIBRCL.search(line.rstrip())), None)
        if path is None:
            raise OSError("librcl.so is not mapped in this process")
        setter = ctypes.CDLL(path).rcl_client_set_on_new_response_callback
        setter.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        setter.restype = ctypes.c_int
        self.set_callback = setter
        # The callback type is void (*)(const void *user_data, size_t number_of_events);
        # eventfd_write(int fd, uint64_t value) takes its two arguments in the same registers
        # on every 64-bit Linux ABI, so the user data carries the descriptor and the event
        # count is added to the counter.
        self.eventfd_write = ctypes.cast(ctypes.CDLL(None).eventfd_write, ctypes.c_void_p).value


_wakeup: _Wakeup | None = None
_unsupported: str | None = None


def wakeup() -> _Wakeup | None:
    """The process's rcl hook, or None when this platform or rcl lacks it (reason logged once)."""
    global _wakeup, _unsupported
    if _wakeup is None and _unsupported is None:
        try:
            if not hasattr(os, "eventfd"):
                raise OSError("no eventfd on this platform")
            _wakeup = _Wakeup()
        except (OSError, AttributeError) as exc:
            _unsupported = str(exc)
            log.info("service responses go through the executor: %s", exc)
    return _wakeup


class SeenReady:
    """A readiness check asked at most once per `hold_s` while it answers yes."""

    def __init__(self, check: Callable[[], Any], hold_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._check = check
        self._hold_s = hold_s
        self._clock = clock
        self._until = -math.inf  # clock time up to which the last yes holds

    def __call__(self) -> bool:
        now = self._clock()
        if now < self._until:
            return True
        if self._check():
            self._until = now + self._hold_s
            return True
        return False


# Every reply of a service reaches every client's reader (rmw filters at take), so a reader
# keeping the services default of 10 loses its own reply when more than 10 replies to other
# clients arrive before it takes them (a busy service on a loaded machine). The gateway's
# clients keep REPLY_DEPTH.
REPLY_DEPTH = 100


def client_qos() -> Any:
    """The QoS of the gateway's service clients: the services default, REPLY_DEPTH deep."""
    from rclpy.qos import QoSProfile  # noqa: PLC0415 - rclpy only once ROS runs
    from rclpy.qos import (  # noqa: PLC0415 - rclpy only once ROS runs
        qos_profile_services_default as d,
    )

    return QoSProfile(history=d.history, depth=REPLY_DEPTH, reliability=d.reliability,
                      durability=d.durability)


class LoopClient:
    """One service client whose responses complete asyncio futures on one loop."""

    def __init__(self, node: Any, srv_type: Any, name: str, hook: _Wakeup) -> None:
        from rclpy.impl.implementation_singleton import (  # noqa: PLC0415 - rclpy once ROS runs
            rclpy_implementation as _rclpy,
        )
        from rclpy.type_support import (  # noqa: PLC0415 - rclpy only once ROS runs
            check_is_valid_srv_type,
        )

        check_is_valid_srv_type(srv_type)  # loads the type support the client needs
        self.name = name
        self.srv_type = srv_type
        self._response_cls = srv_type.Response
        with node.handle:
            self._impl: Any = _rclpy.Client(node.handle, srv_type, name,
                                            client_qos().get_c_qos_profile())
        self._hook = hook
        self._fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self.taken = 0
        self.dropped = 0  # late responses of forgotten calls
        self.users = 0  # calls holding this client (ServiceCaller): not closed while > 0
        self.last_used = time.monotonic()
        self.service_is_ready = SeenReady(self._impl.service_server_is_available, READY_HOLD_S)
        ret = hook.set_callback(self._impl.pointer, hook.eventfd_write, self._fd)
        if ret != _RCL_RET_OK:
            self._impl.destroy_when_not_in_use()
            os.close(self._fd)
            raise OSError(f"rcl_client_set_on_new_response_callback returned {ret}")

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Watch the eventfd on loop (once; on the loop's thread)."""
        if self._loop is None:
            self._loop = loop
            loop.add_reader(self._fd, self._take)

    def send(self, request: Any) -> tuple[int, asyncio.Future[Any]]:
        """Send one request; (sequence number, future completed with the response)."""
        assert self._loop is not None, "attach() first"
        seq = self._impl.send_request(request)
        fut = self._loop.create_future()
        self.pending[seq] = fut
        return seq, fut

    def forget(self, seq: int) -> None:
        """Stop waiting for a request's response (timeout or cancel)."""
        self.pending.pop(seq, None)

    def _take(self) -> None:
        try:
            arrived = os.eventfd_read(self._fd)
        except BlockingIOError:
            arrived = 0
        try:
            taken, dropped = take_all(self._impl.take_response, self._response_cls,
                                      self.pending, arrived)
        except Exception:  # a broken client: its callers run into their budgets
            log.exception("taking a response of %s", self.name)
            return
        self.taken += taken
        self.dropped += dropped

    def close(self) -> None:
        """Unhook the listener (no more writes to the fd), stop watching, destroy the client."""
        self._hook.set_callback(self._impl.pointer, None, None)
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._fd)
        os.close(self._fd)
        self._impl.destroy_when_not_in_use()
        self.pending.clear()  # callers still waiting run into their budgets


def take_all(take: Any, response_cls: Any, pending: dict[int, asyncio.Future[Any]],
             arrived: int) -> tuple[int, int]:
    """Take responses and complete their callers' futures; (delivered, dropped).

    `arrived` counts the samples the listener reported. Answers to other clients of the
    service may be among them (their take comes back empty), so at least that many takes are
    made, and then more until one comes back empty.
    """
    delivered = dropped = 0
    while True:
        header, response = take(response_cls)
        arrived -= 1
        if header is None:
            if arrived <= 0:
                return delivered, dropped
            continue
        fut = pending.pop(header.request_id.sequence_number, None)
        if fut is None or fut.done():
            dropped += 1  # its caller gave up (budget, cancel)
            continue
        fut.set_result(response)
        delivered += 1
