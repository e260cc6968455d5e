"""Serialized samples -> JSON bytes: the compiled converter when present, else the stock path."""

from __future__ import annotations

import logging
from collections.abc import Callable

import orjson
from rclpy.serialization import deserialize_message

from ... import _fast as fast
from ..interfaces.message import import_type, message_to_dict

log = logging.getLogger(__name__)

Converter = Callable[[bytes], bytes]
_converters: dict[str, Converter] = {}


def _stock(type_name: str) -> Converter:
    cls = import_type(type_name)

    def convert(data: bytes) -> bytes:
        return orjson.dumps(message_to_dict(deserialize_message(data, cls)))

    return convert


def _fast(type_name: str) -> Converter | None:
    """The compiled CDR->JSON converter; None without it (the pure twin is slower than the
    stock path on float32 arrays, so it is not used for reads)."""
    if fast.MSGCONV_IMPL != "compiled":
        return None
    try:
        return fast.converter_for(type_name).to_json
    except Exception:
        log.warning("no fast converter for %s; using the stock path", type_name, exc_info=True)
        return None


def implementation() -> str:
    """Which converter data reads use: compiled or stock."""
    return "compiled" if fast.MSGCONV_IMPL == "compiled" else "stock"


def converter(type_name: str) -> Converter:
    """The converter for a type (cached)."""
    conv = _converters.get(type_name)
    if conv is None:
        conv = _converters[type_name] = _fast(type_name) or _stock(type_name)
    return conv


def sample_to_json(type_name: str, data: bytes) -> bytes:
    """JSON bytes of one serialized message (with its 4-byte encapsulation header)."""
    return converter(type_name)(data)
