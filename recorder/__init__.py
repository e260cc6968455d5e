"""recorder: the rosbag black box (ring buffer, fault windows, writer thread, recording index)
and the bulk-data upload store. Imports without rclpy; only `taps` uses it, lazily.
"""

from __future__ import annotations

import importlib
from typing import Any

# Exports load their module on first use: importing recorder.config or recorder.uploads does
# not bring in the ring buffer, the writer or the service (the recorder is off by default).
_EXPORTS = {
    "RINGBUF_IMPL": "buffer",
    "RingBuffer": "buffer",
    "RecorderConfig": "config",
    "Recording": "index",
    "RecordingIndex": "index",
    "Recorder": "service",
    "Upload": "uploads",
    "UploadStore": "uploads",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = [
    "RINGBUF_IMPL",
    "Recorder",
    "RecorderConfig",
    "Recording",
    "RecordingIndex",
    "RingBuffer",
    "Upload",
    "UploadStore",
]
