"""A cap on glibc malloc arenas, set before the gateway starts its threads.

glibc gives each thread that allocates while others hold the main arena its own arena (up
to 8 per core); every arena keeps its own free lists and partly used pages, so a process with
a handful of threads (ROS executor, graph, fault writer, DDS) holds several hundred KiB more
than with one. Python objects come from pymalloc under the GIL, so one arena costs little
contention. mallopt(M_ARENA_MAX) only affects arenas created afterwards: call this first.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys

log = logging.getLogger(__name__)

M_ARENA_MAX = -8  # <malloc.h>


def _glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") is not None
    except (ValueError, OSError):
        return False


def limit(arenas: int) -> bool:
    """Cap glibc's malloc arenas at `arenas` (0: leave glibc's default); True if set."""
    if arenas <= 0 or sys.platform != "linux" or not _glibc():
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    ok = mallopt(M_ARENA_MAX, arenas) == 1
    log.debug("malloc arenas capped at %d: %s", arenas, ok)
    return ok

