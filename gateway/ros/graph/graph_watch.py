"""Graph change notices: a thread blocked in rcl_wait on the node's graph guard condition.

rcl triggers a node's graph guard condition on every change its rmw discovers (a participant,
node, endpoint or ros_discovery_info update, a lost lease); rclpy does not expose it, so this
waits on it through ctypes. An idle gateway then need not poll the graph to see a change: the
poller (discovery/poller.py) polls when this says so, and only rarely otherwise.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

# After a notice, further triggers are left to accumulate this long (one pending flag): a
# burst of discovery (a robot starting) wakes the loop at most 1 / COALESCE_S times a second.
COALESCE_S = 0.05
_RCL_RET_OK, _RCL_RET_TIMEOUT = 0, 2
_FIELDS = ("subscriptions", "guard_conditions", "timers", "clients", "services", "events")


class _WaitSet(ctypes.Structure):
    # rcl/wait.h rcl_wait_set_t: (pointer array, size) per entity kind, then impl
    _fields_ = [*((f, ctypes.c_void_p) for name in _FIELDS
                  for f in (name, "size_of_" + name)), ("impl", ctypes.c_void_p)]


class _Allocator(ctypes.Structure):
    _fields_ = [("allocate", ctypes.c_void_p), ("deallocate", ctypes.c_void_p),
                ("reallocate", ctypes.c_void_p), ("zero_allocate", ctypes.c_void_p),
                ("state", ctypes.c_void_p)]


_lib: list[Any] = []


def _rcl() -> Any:
    if not _lib:
        rcl = ctypes.CDLL("librcl.so")
        rcutils = ctypes.CDLL("librcutils.so")
        rcutils.rcutils_get_default_allocator.restype = _Allocator
        rcl.rcl_node_get_graph_guard_condition.restype = ctypes.c_void_p
        rcl.rcl_node_get_graph_guard_condition.argtypes = [ctypes.c_void_p]
        rcl.rcl_wait_set_init.restype = ctypes.c_int
        rcl.rcl_wait_set_init.argtypes = [ctypes.POINTER(_WaitSet), *[ctypes.c_size_t] * 6,
                                          ctypes.c_void_p, _Allocator]
        for fn in ("rcl_wait_set_clear", "rcl_wait_set_fini"):
            getattr(rcl, fn).restype = ctypes.c_int
            getattr(rcl, fn).argtypes = [ctypes.POINTER(_WaitSet)]
        rcl.rcl_wait_set_add_guard_condition.restype = ctypes.c_int
        rcl.rcl_wait_set_add_guard_condition.argtypes = [ctypes.POINTER(_WaitSet),
                                                         ctypes.c_void_p, ctypes.c_void_p]
        rcl.rcl_wait.restype = ctypes.c_int
        rcl.rcl_wait.argtypes = [ctypes.POINTER(_WaitSet), ctypes.c_int64]
        _lib.extend((rcl, rcutils))
    return _lib[0]


class GraphWatch:
    """Calls on_change (from its own thread) after each graph change of `node`; stop() before
    the node or its context goes."""

    def __init__(self, node: Any, on_change: Callable[[], None]) -> None:
        from rclpy.impl.implementation_singleton import (  # noqa: PLC0415 - rclpy once ROS runs
            rclpy_implementation,
        )

        rcl = _rcl()
        self._on_change = on_change
        self._node = node  # kept alive while the thread waits on its guard condition
        self._graph = rcl.rcl_node_get_graph_guard_condition(node.handle.pointer)
        if not self._graph:
            raise RuntimeError("the node has no graph guard condition")
        self._stop_gc = rclpy_implementation.GuardCondition(node.context.handle)
        self._ws = _WaitSet()
        ret = rcl.rcl_wait_set_init(ctypes.byref(self._ws), 0, 2, 0, 0, 0, 0,
                                    node.context.handle.pointer,
                                    _lib[1].rcutils_get_default_allocator())
        if ret != _RCL_RET_OK:
            self._stop_gc.destroy_when_not_in_use()
            raise RuntimeError(f"rcl_wait_set_init failed ({ret})")
        self._stopping = threading.Event()
        self.notices = 0  # graph changes reported
        self._thread = threading.Thread(target=self._run, name="ros-graph-watch", daemon=True)

    def start(self) -> GraphWatch:
        """Start waiting."""
        self._thread.start()
        return self

    def _run(self) -> None:
        rcl = _rcl()
        ws = ctypes.byref(self._ws)
        stop = ctypes.c_void_p(self._stop_gc.pointer)
        try:
            while not self._stopping.is_set():
                rcl.rcl_wait_set_clear(ws)
                rcl.rcl_wait_set_add_guard_condition(ws, self._graph, None)
                rcl.rcl_wait_set_add_guard_condition(ws, stop, None)
                ret = rcl.rcl_wait(ws, -1)  # blocks until a trigger: no periodic wake
                if self._stopping.is_set():
                    break
                if ret not in (_RCL_RET_OK, _RCL_RET_TIMEOUT):
                    log.warning("graph watch: rcl_wait failed (%d); graph polled only", ret)
                    break
                slots = ctypes.cast(ctypes.c_void_p(self._ws.guard_conditions),
                                    ctypes.POINTER(ctypes.c_void_p))
                if ret == _RCL_RET_OK and slots[0]:  # the graph's slot stays set when it fired
                    self.notices += 1
                    self._on_change()
                    self._stopping.wait(COALESCE_S)
        except Exception:
            log.exception("graph watch stopped")

    def stop(self) -> None:
        """Wake and join the thread, then free the wait set (before the node goes)."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        if self._thread.is_alive():
            self._stop_gc.trigger_guard_condition()
            self._thread.join(timeout=5.0)
        if not self._thread.is_alive():
            _rcl().rcl_wait_set_fini(ctypes.byref(self._ws))
            self._stop_gc.destroy_when_not_in_use()
