"""JSON -> CDR (little-endian XCDR1) from `.msg` definitions: writes of types the gateway has
no Python class for (their definitions come from node type descriptions, ros/described.py).

Fields missing from the JSON object take their default (the definition's, else zero, empty
or false); unknown fields and values that do not fit are MessageFieldError naming the field.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Mapping
from typing import Any

from rosidl_adapter.parser import parse_message_string

from .msgtypes import MessageFieldError

_SECTION = re.compile(r"\n=+\nMSG: ([^\n]+)\n")
_FORMATS = {"bool": "?", "byte": "B", "char": "B", "uint8": "B", "int8": "b", "int16": "h",
            "uint16": "H", "int32": "i", "uint32": "I", "int64": "q", "uint64": "Q",
            "float32": "f", "float64": "d"}
_INTS = {"byte": (0, 255), "char": (0, 255), "uint8": (0, 255), "int8": (-128, 127),
         "int16": (-(1 << 15), (1 << 15) - 1), "uint16": (0, (1 << 16) - 1),
         "int32": (-(1 << 31), (1 << 31) - 1), "uint32": (0, (1 << 32) - 1),
         "int64": (-(1 << 63), (1 << 63) - 1), "uint64": (0, (1 << 64) - 1)}


def _canonical(name: str, pkg: str) -> str:
    parts = name.split("/")
    if len(parts) == 3:
        return name
    if len(parts) == 2:
        return f"{parts[0]}/msg/{parts[1]}"
    return f"{pkg}/msg/{name}"


class Encoder:
    """Encodes JSON objects of one message type (and the types it nests) to CDR."""

    def __init__(self, type_name: str, definition: str) -> None:
        parts = _SECTION.split(definition)
        texts = {type_name: parts[0]}
        for i in range(1, len(parts) - 1, 2):
            texts[_canonical(parts[i].strip(), "")] = parts[i + 1]
        self.type_name = type_name
        self._specs: dict[str, Any] = {}
        for name, text in texts.items():
            pkg, _, short = name.split("/")
            self._specs[name] = parse_message_string(pkg, short, text)

    def encode(self, fields: Mapping[str, Any]) -> bytes:
        """CDR bytes (with the 4-byte header) of the message `fields` describe."""
        out = bytearray()
        self._struct(out, self.type_name, fields, "")
        return b"\x00\x01\x00\x00" + bytes(out)

    def _struct(self, out: bytearray, name: str, value: Any, path: str) -> None:
        if not isinstance(value, Mapping):
            raise MessageFieldError(path, f"expected object, got {type(value).__name__}")
        spec = self._specs.get(name)
        if spec is None:
            raise MessageFieldError(path, f"no definition of {name}")
        known = {f.name for f in spec.fields}
        extra = sorted(set(value) - known)
        if extra:
            raise MessageFieldError(_join(path, extra[0]), f"no such field in {name}")
        for f in spec.fields:
            sub = _join(path, f.name)
            given = value.get(f.name, None) if f.name in value else f.default_value
            self._field(out, f.type, given, sub, name.split("/")[0])

    def _field(self, out: bytearray, t: Any, value: Any, path: str, pkg: str) -> None:
        if t.is_array:
            items = [] if value is None else value
            if not isinstance(items, (list, tuple)):
                raise MessageFieldError(path, f"expected array, got {type(items).__name__}")
            if t.array_size is not None and not t.is_upper_bound:
                if value is None:
                    items = [None] * t.array_size
                elif len(items) != t.array_size:
                    raise MessageFieldError(path, f"expected {t.array_size} elements, got "
                                                  f"{len(items)}")
            else:
                if t.is_upper_bound and len(items) > t.array_size:
                    raise MessageFieldError(path, f"at most {t.array_size} elements allowed")
                _u32(out, len(items))
            for i, item in enumerate(items):
                self._single(out, t, item, f"{path}[{i}]", pkg)
        else:
            self._single(out, t, value, path, pkg)

    def _single(self, out: bytearray, t: Any, value: Any, path: str, pkg: str) -> None:
        if not t.is_primitive_type():
            nested = _canonical(f"{t.pkg_name}/{t.type}", pkg)
            self._struct(out, nested, {} if value is None else value, path)
            return
        if t.type in ("string", "wstring"):
            if t.type == "wstring":
                raise MessageFieldError(path, "wstring fields cannot be written this way")
            text = "" if value is None else value
            if not isinstance(text, str):
                raise MessageFieldError(path, f"expected string, got {type(text).__name__}")
            raw = text.encode("utf-8")
            if t.string_upper_bound is not None and len(raw) > t.string_upper_bound:
                raise MessageFieldError(path, f"at most {t.string_upper_bound} bytes allowed")
            _u32(out, len(raw) + 1)
            out.extend(raw + b"\x00")
            return
        fmt = _FORMATS[t.type]
        _align(out, struct.calcsize(fmt))
        out.extend(struct.pack("<" + fmt, _number(t.type, value, path)))


def _number(kind: str, value: Any, path: str) -> Any:
    if kind == "bool":
        if value is None:
            return False
        if not isinstance(value, bool):
            raise MessageFieldError(path, f"expected boolean, got {type(value).__name__}")
        return value
    if value is None:
        return 0.0 if kind.startswith("float") else 0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MessageFieldError(path, f"expected number, got {type(value).__name__}")
    if kind.startswith("float"):
        if kind == "float32" and math.isfinite(value) and abs(value) > 3.4028234663852886e38:
            raise MessageFieldError(path, "out of float32 range")
        return float(value)
    if isinstance(value, float):
        if not value.is_integer():
            raise MessageFieldError(path, f"expected integer, got {value!r}")
        value = int(value)
    low, high = _INTS[kind]
    if not low <= value <= high:
        raise MessageFieldError(path, f"{value} is out of {kind} range [{low}, {high}]")
    return value


def _u32(out: bytearray, value: int) -> None:
    _align(out, 4)
    out.extend(struct.pack("<I", value))


def _align(out: bytearray, size: int) -> None:
    out.extend(b"\x00" * (-len(out) % size))


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
