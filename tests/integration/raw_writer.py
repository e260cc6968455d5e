"""A raw writer of a DDS topic outside the ROS name space (test helper for what other
distributions' participants send, e.g. a Humble-layout `ros_discovery_info`)."""

from __future__ import annotations

import ctypes
from typing import Any

from gateway.ros._rawtopic import _RELIABLE, _TRANSIENT_LOCAL, _Bytes, _libs, _Qos


class _PubOptions(ctypes.Structure):
    """rmw_publisher_options_t (rmw/types.h)."""

    _fields_ = [("rmw_specific_publisher_payload", ctypes.c_void_p),
                ("require_unique_network_flow_endpoints", ctypes.c_int)]


class RawTopicWriter:
    """A reliable, transient-local (depth 1) writer publishing serialized CDR as given."""

    def __init__(self, node: Any, msg_cls: Any, dds_topic: str) -> None:
        libs = _libs()
        rmw, rcl = libs["rmw"], libs["rcl"]
        rmw.rmw_create_publisher.restype = ctypes.c_void_p
        rmw.rmw_create_publisher.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                                             ctypes.POINTER(_Qos), ctypes.POINTER(_PubOptions)]
        rmw.rmw_publish_serialized_message.restype = ctypes.c_int
        rmw.rmw_publish_serialized_message.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Bytes),
                                                       ctypes.c_void_p]
        rmw.rmw_destroy_publisher.restype = ctypes.c_int
        rmw.rmw_destroy_publisher.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        if getattr(type(msg_cls), "_TYPE_SUPPORT", None) is None:
            type(msg_cls).__import_type_support__()
        ts = ctypes.pythonapi.PyCapsule_GetPointer(type(msg_cls)._TYPE_SUPPORT, None)
        self._node = node
        self._rmw_node = rcl.rcl_node_get_rmw_handle(node.handle.pointer)
        qos = _Qos(history=1, depth=1, reliability=_RELIABLE, durability=_TRANSIENT_LOCAL,
                   avoid_ros_namespace_conventions=True)
        options = _PubOptions()
        self._pub = rmw.rmw_create_publisher(self._rmw_node, ts, dds_topic.encode(),
                                             ctypes.byref(qos), ctypes.byref(options))
        if not self._pub:
            raise RuntimeError(f"cannot create a writer of {dds_topic!r}")

    def publish(self, cdr: bytes) -> None:
        """Publish one serialized sample (with its CDR header)."""
        data = (ctypes.c_uint8 * len(cdr)).from_buffer_copy(cdr)
        msg = _Bytes(buffer=ctypes.cast(data, ctypes.POINTER(ctypes.c_uint8)),
                     buffer_length=len(cdr), buffer_capacity=len(cdr))
        ret = _libs()["rmw"].rmw_publish_serialized_message(self._pub, ctypes.byref(msg), None)
        if ret != 0:
            raise RuntimeError(f"rmw_publish_serialized_message returned {ret}")

    def close(self) -> None:
        """Destroy the writer."""
        if self._pub:
            _libs()["rmw"].rmw_destroy_publisher(self._rmw_node, self._pub)
            self._pub = None
