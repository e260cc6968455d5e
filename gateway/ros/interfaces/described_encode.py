"""JSON -> CDR (little-endian XCDR1) from `.msg` definitions: writes of types the gateway has
no Python class for (their definitions come from node type descriptions, described.py).

Fields missing from the JSON object take their default (the definition's, else zero, empty
or false); unknown fields and values that do not fit are MessageFieldError naming the field.
A definition set is checked once (typegraph.check_types: no recursive type, the
`ros.type_limits` caps) and each encoding is bounded in bytes and time (EncodeLimitError).
"""

from __future__ import annotations

import math
import re
import struct
import time
from collections.abc import Mapping
from typing import Any

from rosidl_adapter.parser import InvalidSpecification, parse_message_string

from ..._fast import typegraph
from ..._fast.typegraph import SEQUENCE, Member, check_types
from .msgtypes import MessageFieldError

_SECTION = re.compile(r"\n=+\nMSG: ([^\n]+)\n")
_CHECK_EVERY = 1024  # array elements between two looks at the clock and the size
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


class EncodeLimitError(MessageFieldError):
    """An encoding refused past its byte or time budget (settings ros.type_limits.*)."""


class _Out(bytearray):
    """The CDR being written, with the budget of this one encoding (calls may overlap)."""

    budget_s: float
    deadline: float
    max_bytes: int


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
            try:
                self._specs[name] = parse_message_string(pkg, short, text)
            except InvalidSpecification as exc:  # not a ValueError: answered 501 as one
                raise ValueError(f"{name}: {exc}") from None
        check_types(type_name, self._members(), typegraph.LIMITS.max_encode_bytes)

    def _members(self) -> dict[str, list[Member]]:
        out: dict[str, list[Member]] = {}
        for name, spec in self._specs.items():
            pkg = name.split("/")[0]
            members = []
            for f in spec.fields:
                t = f.type
                nested = None if t.is_primitive_type() else _canonical(f"{t.pkg_name}/{t.type}",
                                                                       pkg)
                size = 4 if nested or t.type in ("string", "wstring") else struct.calcsize(
                    _FORMATS[t.type])
                array = 0
                if t.is_array:
                    fixed = t.array_size is not None and not t.is_upper_bound
                    array = t.array_size if fixed else SEQUENCE
                members.append(Member(f.name, nested, size, array))
            out[name] = members
        return out

    def encode(self, fields: Mapping[str, Any], timeout_s: float | None = None,
               max_bytes: int | None = None) -> bytes:
        """CDR bytes (with the 4-byte header) of the message `fields` describe; EncodeLimitError
        past `max_bytes` or `timeout_s` (defaults: the ros.type_limits settings)."""
        limits = typegraph.LIMITS
        out = _Out()
        out.budget_s = limits.encode_timeout_s if timeout_s is None else timeout_s
        out.deadline = time.monotonic() + out.budget_s
        out.max_bytes = limits.max_encode_bytes if max_bytes is None else max_bytes
        self._struct(out, self.type_name, fields, "")
        self._check(out)
        return b"\x00\x01\x00\x00" + bytes(out)

    @staticmethod
    def _check(out: bytearray) -> None:
        assert isinstance(out, _Out)
        if len(out) > out.max_bytes:
            raise EncodeLimitError("", f"the message takes more than {out.max_bytes} bytes "
                                       "(setting ros.type_limits.max_encode_bytes)")
        if time.monotonic() > out.deadline:
            raise EncodeLimitError("", f"encoding took longer than {out.budget_s:g} s "
                                       "(setting ros.type_limits.encode_timeout_sec)")

    def _struct(self, out: bytearray, name: str, value: Any, path: str) -> None:
        self._check(out)
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
                if i % _CHECK_EVERY == _CHECK_EVERY - 1:
                    self._check(out)
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
