"""recorder: the rosbag black box (ring buffer, fault windows, writer thread, recording index)
and the bulk-data upload store. Imports without rclpy; only `taps` uses it, lazily.
"""

from .buffer import RINGBUF_IMPL, RingBuffer
from .config import RecorderConfig
from .index import Recording, RecordingIndex
from .service import Recorder
from .uploads import Upload, UploadStore

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
