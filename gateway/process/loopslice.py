"""A short scheduler time slice for the event-loop thread (Linux EEVDF latency hint).

On a busy machine a ready event loop may wait in the kernel's run queue behind threads that
use their whole slice (SSE clients parsing a burst, other processes). Since Linux 6.12 the
EEVDF scheduler lets a thread ask for a shorter slice (sched_setattr, sched_runtime of a
SCHED_OTHER thread): it gets no more CPU, but an earlier deadline, so it runs soon after it
wakes. Threads the loop thread starts later keep the default slice (reset on fork); a
thread with a real-time policy or a negative nice value is left as it is.
"""

from __future__ import annotations

import ctypes
import logging
import os
import platform
import struct
import threading

log = logging.getLogger(__name__)

# sched_setattr / sched_getattr syscall numbers by machine (glibc has no wrapper)
_SYSCALLS = {"x86_64": (314, 315), "aarch64": (274, 275), "riscv64": (274, 275),
             "armv7l": (380, 381), "armv8l": (380, 381)}
_ATTR = struct.Struct("IIQiIQQQII")  # struct sched_attr, SCHED_ATTR_SIZE_VER1 (56 bytes)
_RESET_ON_FORK = 0x01
SCHED_OTHER = 0
MIN_US, MAX_US = 100, 100_000  # the kernel's bounds for a custom slice


def _calls() -> tuple[ctypes.CDLL, int, int] | None:
    if platform.system() != "Linux":
        return None
    nums = _SYSCALLS.get(platform.machine())
    if nums is None:
        return None
    return ctypes.CDLL(None, use_errno=True), nums[0], nums[1]


def get_slice_us(tid: int = 0) -> int | None:
    """The slice (us) of a thread (0: the calling one), None where it cannot be read."""
    calls = _calls()
    if calls is None:
        return None
    libc, _, get = calls
    buf = ctypes.create_string_buffer(_ATTR.size)
    if libc.syscall(get, tid, buf, _ATTR.size, 0) != 0:
        return None
    return int(_ATTR.unpack(buf.raw)[5]) // 1000


def apply(slice_us: int) -> int | None:
    """Give the calling thread a slice of slice_us (0: leave it); the slice set, or None."""
    if slice_us <= 0:
        return None
    calls = _calls()
    if calls is None:
        return None
    libc, setattr_, get = calls
    buf = ctypes.create_string_buffer(_ATTR.size)
    if libc.syscall(get, 0, buf, _ATTR.size, 0) != 0:
        return None
    attr = list(_ATTR.unpack(buf.raw))
    if attr[1] != SCHED_OTHER or attr[3] < 0:
        return None  # real-time policies or a raised priority: the operator's choice stands
    us = min(max(slice_us, MIN_US), MAX_US)
    attr[0], attr[2], attr[5] = _ATTR.size, attr[2] | _RESET_ON_FORK, us * 1000
    if libc.syscall(setattr_, 0, ctypes.create_string_buffer(_ATTR.pack(*attr), _ATTR.size),
                    0) != 0:
        err = ctypes.get_errno()
        log.debug("event loop slice not set: %s", os.strerror(err))
        return None
    applied = get_slice_us()
    if applied != us:  # kernels before 6.12 accept the call but keep their own slice
        return None
    log.debug("event loop thread %d: %d us scheduler slice", threading.get_native_id(), us)
    return us
