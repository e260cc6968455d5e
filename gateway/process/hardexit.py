"""An exit deadline that fires even while a C call holds the GIL.

DDS teardown can deadlock inside the middleware (a participant's destructor waits for its
event thread, which waits for a lock the destructor holds) while rclpy keeps the GIL, so a
Python watchdog thread never runs. This arms a POSIX timer whose expiry starts a libc thread
that calls ``_exit(status)`` directly: no Python code and no GIL are involved.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

_SIGEV_THREAD = 2
_CLOCK_MONOTONIC = 1


class _SigEvent(ctypes.Structure):
    """glibc's ``struct sigevent`` (64 bytes) with the SIGEV_THREAD members."""

    _fields_ = [
        ("sigev_value", ctypes.c_void_p),
        ("sigev_signo", ctypes.c_int),
        ("sigev_notify", ctypes.c_int),
        ("sigev_notify_function", ctypes.c_void_p),
        ("sigev_notify_attributes", ctypes.c_void_p),
        ("_pad", ctypes.c_int * 8),
    ]


class _TimeSpec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _ITimerSpec(ctypes.Structure):
    _fields_ = [("it_interval", _TimeSpec), ("it_value", _TimeSpec)]


def arm(seconds: float, status: int = 0) -> bool:
    """Make the process ``_exit(status)`` after seconds unless it left before.

    Returns False where it cannot be armed (not glibc on Linux); the caller then has only
    its Python-level fallback. The deadline cannot be cancelled: arm it on the way out.
    """
    if not sys.platform.startswith("linux") or seconds <= 0:
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        exit_fn = ctypes.cast(libc._exit, ctypes.c_void_p).value
        timer_create = libc.timer_create
        timer_settime = libc.timer_settime
    except (OSError, AttributeError):
        return False
    # The notify function receives the sigval union by value; on the Linux ABIs the union
    # travels in the first integer argument register, which is _exit's status.
    event = _SigEvent(sigev_value=status, sigev_notify=_SIGEV_THREAD,
                      sigev_notify_function=exit_fn)
    timer = ctypes.c_void_p()
    if timer_create(_CLOCK_MONOTONIC, ctypes.byref(event), ctypes.byref(timer)) != 0:
        return False
    whole = int(seconds)
    when = _ITimerSpec(it_value=_TimeSpec(whole, int((seconds - whole) * 1e9)))
    return bool(timer_settime(timer, 0, ctypes.byref(when), None) == 0)
