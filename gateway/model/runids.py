"""Ids of runtime objects (subscriptions, triggers, executions, runs, locks), never reused.

A counter alone restarts at 1 with the process: after a crash another client would be handed
the id a first client still holds. Each id therefore carries a tag drawn at random once per
process (48 bits), then a counter: `sub_7k2m9q4x1c_1`. Readable, ordered within a run, and
unique across restarts.
"""

from __future__ import annotations

import itertools
import secrets
import threading

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


def _base36(n: int) -> str:
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = _ALPHABET[r] + out
        if n == 0:
            return out


BOOT_TAG = _base36(secrets.randbits(48)).rjust(10, "0")
_counter = itertools.count(1)
_lock = threading.Lock()


def new_id(prefix: str) -> str:
    """`<prefix>_<boot tag>_<n>`: unique within this process and across its restarts."""
    with _lock:
        n = next(_counter)
    return f"{prefix}_{BOOT_TAG}_{n}"
