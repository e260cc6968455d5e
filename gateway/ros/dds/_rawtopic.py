"""A raw reader of a DDS topic outside the ROS name space, through the rmw C API (ctypes).

rcl expands every topic name to an absolute ROS name, so no rclpy subscription can read the
rmw's own `ros_discovery_info` (the DDS topic has no leading slash). The rmw API takes the DDS
name as given when `avoid_ros_namespace_conventions` is set. Samples are taken as serialized
CDR by polling; nothing here runs a callback.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any

_RELIABLE, _TRANSIENT_LOCAL, _KEEP_LAST = 1, 1, 1
_BEST_EFFORT, _VOLATILE = 2, 2
_RMW_RET_OK = 0


class _Time(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_uint64), ("nsec", ctypes.c_uint64)]


class _Qos(ctypes.Structure):
    """rmw_qos_profile_t (rmw/types.h)."""

    _fields_ = [("history", ctypes.c_int), ("depth", ctypes.c_size_t),
                ("reliability", ctypes.c_int), ("durability", ctypes.c_int),
                ("deadline", _Time), ("lifespan", _Time), ("liveliness", ctypes.c_int),
                ("liveliness_lease_duration", _Time),
                ("avoid_ros_namespace_conventions", ctypes.c_bool)]


class _SubOptions(ctypes.Structure):
    """rmw_subscription_options_t (rmw/types.h)."""

    _fields_ = [("rmw_specific_subscription_payload", ctypes.c_void_p),
                ("ignore_local_publications", ctypes.c_bool),
                ("require_unique_network_flow_endpoints", ctypes.c_int),
                ("content_filter_options", ctypes.c_void_p)]


class _Allocator(ctypes.Structure):
    """rcutils_allocator_t."""

    _fields_ = [("allocate", ctypes.c_void_p), ("deallocate", ctypes.c_void_p),
                ("reallocate", ctypes.c_void_p), ("zero_allocate", ctypes.c_void_p),
                ("state", ctypes.c_void_p)]


class _Bytes(ctypes.Structure):
    """rcutils_uint8_array_t (rmw_serialized_message_t)."""

    _fields_ = [("buffer", ctypes.POINTER(ctypes.c_uint8)), ("buffer_length", ctypes.c_size_t),
                ("buffer_capacity", ctypes.c_size_t), ("allocator", _Allocator)]


_lib: dict[str, Any] = {}


def _rmw_implementation() -> Any:
    """The loaded rmw implementation (rcl links it directly in the PyPI wheels)."""
    names = ["librmw_implementation.so",
             f"lib{os.environ.get('RMW_IMPLEMENTATION') or 'rmw_fastrtps_cpp'}.so"]
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        if hasattr(lib, "rmw_create_subscription"):
            return lib
    raise RuntimeError(f"no rmw implementation library found ({', '.join(names)})")


def _libs() -> dict[str, Any]:
    if not _lib:
        rmw = _rmw_implementation()
        rmw_base = ctypes.CDLL("librmw.so")
        rcl = ctypes.CDLL("librcl.so")
        rcutils = ctypes.CDLL("librcutils.so")
        rcl.rcl_node_get_rmw_handle.restype = ctypes.c_void_p
        rcl.rcl_node_get_rmw_handle.argtypes = [ctypes.c_void_p]
        rmw.rmw_create_subscription.restype = ctypes.c_void_p
        rmw.rmw_create_subscription.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                                ctypes.c_char_p, ctypes.POINTER(_Qos),
                                                ctypes.POINTER(_SubOptions)]
        rmw.rmw_destroy_subscription.restype = ctypes.c_int
        rmw.rmw_destroy_subscription.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        rmw.rmw_take_serialized_message.restype = ctypes.c_int
        rmw.rmw_take_serialized_message.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Bytes),
                                                    ctypes.POINTER(ctypes.c_bool),
                                                    ctypes.c_void_p]
        rmw_base.rmw_get_default_subscription_options.restype = _SubOptions
        rcutils.rcutils_get_default_allocator.restype = _Allocator
        rcutils.rcutils_uint8_array_init.restype = ctypes.c_int
        rcutils.rcutils_uint8_array_init.argtypes = [ctypes.POINTER(_Bytes), ctypes.c_size_t,
                                                     ctypes.POINTER(_Allocator)]
        rcutils.rcutils_uint8_array_fini.restype = ctypes.c_int
        rcutils.rcutils_uint8_array_fini.argtypes = [ctypes.POINTER(_Bytes)]
        ctypes.pythonapi.PyCapsule_GetPointer.restype = ctypes.c_void_p
        ctypes.pythonapi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
        _lib.update(rmw=rmw, rmw_base=rmw_base, rcl=rcl, rcutils=rcutils)
    return _lib


def message_type_support(msg_cls: Any) -> int:
    """Address of an rclpy message class's C typesupport (rosidl_message_type_support_t)."""
    _libs()
    if getattr(type(msg_cls), "_TYPE_SUPPORT", None) is None:
        type(msg_cls).__import_type_support__()
    return int(ctypes.pythonapi.PyCapsule_GetPointer(type(msg_cls)._TYPE_SUPPORT, None))


class RawTopicReader:
    """A reliable, transient-local reader of one DDS topic on an rclpy node's participant.

    Each reader is a new DDS entity: writers send it their kept samples again (the way to
    re-learn what an older reader missed). Not thread-safe: one owner calls take() and close().
    """

    def __init__(self, node: Any, msg_cls: Any, dds_topic: str, depth: int = 100,
                 reliable: bool = True, transient_local: bool = True,
                 type_support: int | None = None) -> None:
        libs = _libs()
        ts = type_support if type_support is not None else message_type_support(msg_cls)
        self._node = node  # keeps the rclpy node (and its rmw node) alive
        self._rmw_node = libs["rcl"].rcl_node_get_rmw_handle(node.handle.pointer)
        if not self._rmw_node:
            raise RuntimeError("the node has no rmw handle")
        qos = _Qos(history=_KEEP_LAST, depth=depth,
                   reliability=_RELIABLE if reliable else _BEST_EFFORT,
                   durability=_TRANSIENT_LOCAL if transient_local else _VOLATILE,
                   avoid_ros_namespace_conventions=True)
        options = libs["rmw_base"].rmw_get_default_subscription_options()
        self._sub = libs["rmw"].rmw_create_subscription(
            self._rmw_node, ts, dds_topic.encode(), ctypes.byref(qos), ctypes.byref(options))
        if not self._sub:
            raise RuntimeError(f"cannot create a reader of DDS topic {dds_topic!r}")
        self._buf = _Bytes()
        alloc = libs["rcutils"].rcutils_get_default_allocator()
        if libs["rcutils"].rcutils_uint8_array_init(ctypes.byref(self._buf), 4096,
                                                    ctypes.byref(alloc)) != _RMW_RET_OK:
            libs["rmw"].rmw_destroy_subscription(self._rmw_node, self._sub)
            raise RuntimeError("cannot allocate a sample buffer")
        self._lock = threading.Lock()

    def take(self, limit: int = 1000) -> list[bytes]:
        """The serialized samples waiting (CDR with its 4-byte encapsulation header)."""
        out: list[bytes] = []
        rmw = _libs()["rmw"]
        taken = ctypes.c_bool(False)
        with self._lock:
            if not self._sub:
                return out
            for _ in range(limit):
                taken.value = False
                ret = rmw.rmw_take_serialized_message(self._sub, ctypes.byref(self._buf),
                                                      ctypes.byref(taken), None)
                if ret != _RMW_RET_OK or not taken.value:
                    break
                out.append(ctypes.string_at(self._buf.buffer, self._buf.buffer_length))
        return out

    def matched(self) -> int:
        """Writers matched with this reader."""
        rmw = _libs()["rmw"]
        if not getattr(rmw, "_diag_reader_count", False):
            rmw.rmw_subscription_count_matched_publishers.restype = ctypes.c_int
            rmw.rmw_subscription_count_matched_publishers.argtypes = [
                ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
            rmw._diag_reader_count = True
        count = ctypes.c_size_t(0)
        with self._lock:
            if not self._sub:
                return 0
            rmw.rmw_subscription_count_matched_publishers(self._sub, ctypes.byref(count))
        return int(count.value)

    def close(self) -> None:
        """Destroy the DDS reader and free the buffer (idempotent)."""
        with self._lock:
            if self._sub:
                libs = _libs()
                libs["rmw"].rmw_destroy_subscription(self._rmw_node, self._sub)
                libs["rcutils"].rcutils_uint8_array_fini(ctypes.byref(self._buf))
                self._sub = None


class _PubOptions(ctypes.Structure):
    """rmw_publisher_options_t (rmw/types.h)."""

    _fields_ = [("rmw_specific_publisher_payload", ctypes.c_void_p),
                ("require_unique_network_flow_endpoints", ctypes.c_int)]


def _writer_api() -> Any:
    rmw = _libs()["rmw"]
    if not getattr(rmw, "_diag_writer_api", False):
        rmw.rmw_create_publisher.restype = ctypes.c_void_p
        rmw.rmw_create_publisher.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                                             ctypes.POINTER(_Qos), ctypes.POINTER(_PubOptions)]
        rmw.rmw_publish_serialized_message.restype = ctypes.c_int
        rmw.rmw_publish_serialized_message.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Bytes),
                                                       ctypes.c_void_p]
        rmw.rmw_destroy_publisher.restype = ctypes.c_int
        rmw.rmw_destroy_publisher.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        rmw.rmw_publisher_count_matched_subscriptions.restype = ctypes.c_int
        rmw.rmw_publisher_count_matched_subscriptions.argtypes = [
            ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
        rmw._diag_writer_api = True
    return rmw


class RawTopicWriter:
    """A writer of one DDS topic publishing serialized CDR as given (same typesupport rules as
    RawTopicReader)."""

    def __init__(self, node: Any, msg_cls: Any, dds_topic: str, depth: int = 1,
                 reliable: bool = True, transient_local: bool = True,
                 type_support: int | None = None) -> None:
        rmw = _writer_api()
        ts = type_support if type_support is not None else message_type_support(msg_cls)
        self._node = node
        self._rmw_node = _libs()["rcl"].rcl_node_get_rmw_handle(node.handle.pointer)
        qos = _Qos(history=_KEEP_LAST, depth=depth,
                   reliability=_RELIABLE if reliable else _BEST_EFFORT,
                   durability=_TRANSIENT_LOCAL if transient_local else _VOLATILE,
                   avoid_ros_namespace_conventions=True)
        self._pub = rmw.rmw_create_publisher(self._rmw_node, ts, dds_topic.encode(),
                                             ctypes.byref(qos), ctypes.byref(_PubOptions()))
        if not self._pub:
            raise RuntimeError(f"cannot create a writer of DDS topic {dds_topic!r}")
        self._lock = threading.Lock()

    def publish(self, cdr: bytes) -> None:
        """Publish one serialized sample (with its CDR header)."""
        data = (ctypes.c_uint8 * len(cdr)).from_buffer_copy(cdr)
        msg = _Bytes(buffer=ctypes.cast(data, ctypes.POINTER(ctypes.c_uint8)),
                     buffer_length=len(cdr), buffer_capacity=len(cdr))
        with self._lock:
            if not self._pub:
                raise RuntimeError("the writer is closed")
            ret = _writer_api().rmw_publish_serialized_message(self._pub, ctypes.byref(msg),
                                                               None)
        if ret != _RMW_RET_OK:
            raise RuntimeError(f"rmw_publish_serialized_message returned {ret}")

    def matched(self) -> int:
        """Subscriptions matched with this writer."""
        count = ctypes.c_size_t(0)
        with self._lock:
            if not self._pub:
                return 0
            _writer_api().rmw_publisher_count_matched_subscriptions(self._pub,
                                                                    ctypes.byref(count))
        return int(count.value)

    def close(self) -> None:
        """Destroy the writer (idempotent)."""
        with self._lock:
            if self._pub:
                _writer_api().rmw_destroy_publisher(self._rmw_node, self._pub)
                self._pub = None
