"""mallocarenas.limit: the arena cap holds for threads started after it."""

from __future__ import annotations

import subprocess
import sys

import pytest

# Threads that each hold a malloc'd block while the others allocate; glibc's malloc_stats
# prints one "Arena N:" block per arena in use to stderr.
_CHILD = """
import ctypes, sys, threading
from gateway.process import mallocarenas
print(mallocarenas.limit(int(sys.argv[1])))
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
barrier = threading.Barrier(4)
def work():
    barrier.wait()
    for _ in range(200):
        libc.free(ctypes.c_void_p(libc.malloc(100000)))
    barrier.wait()
threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
sys.stdout.flush()
libc.malloc_stats()
"""


def _arenas(cap: int) -> tuple[str, int]:
    done = subprocess.run([sys.executable, "-c", _CHILD, str(cap)], capture_output=True,
                          text=True, timeout=60, check=True)
    return done.stdout.strip(), done.stderr.count("Arena ")


glibc = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")


@glibc
def test_capped_at_one_arena() -> None:
    assert _arenas(1) == ("True", 1)


@glibc
def test_zero_leaves_the_default() -> None:
    said, arenas = _arenas(0)
    assert said == "False" and arenas > 1
