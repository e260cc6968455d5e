"""The ring buffer twin in use: compiled ``ringbuf_c`` when built, else ``ringbuf_py``.

``DIAG_GATEWAY_PURE=1`` forces the pure twin. ``RINGBUF_IMPL`` says which one is loaded.
"""

from __future__ import annotations

import logging
import os
from types import ModuleType
from typing import TYPE_CHECKING

from . import ringbuf_py

log = logging.getLogger(__name__)

ringbuf: ModuleType = ringbuf_py
RINGBUF_IMPL = "pure"

if os.environ.get("DIAG_GATEWAY_PURE", "").strip().lower() not in ("1", "true", "yes"):
    try:
        from . import ringbuf_c
    except ImportError as exc:
        # logged, not warned: the recorder works (slower) without the compiled twin
        log.info("recorder: compiled ringbuf_c not available (%s); using the pure twin", exc)
    else:
        ringbuf = ringbuf_c
        RINGBUF_IMPL = "compiled"

if TYPE_CHECKING:
    from .ringbuf_py import RingBuffer
else:
    RingBuffer = ringbuf.RingBuffer

__all__ = ["RINGBUF_IMPL", "RingBuffer", "ringbuf"]
