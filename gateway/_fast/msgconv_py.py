"""Raw CDR bytes of a ROS 2 message to JSON bytes, driven by a cached per-type plan.

This is the only implementation. It runs as plain Python and is compiled a second
time by Cython as ``msgconv_c`` (C types in ``msgconv_c.pxd``); branches on
``cython.compiled`` select pointer reads and a C output buffer in the compiled twin,
``struct``/``array`` batches in the pure one. Names used only inside compiled branches
(``memcpy``, ``malloc``, ...) come from the ``.pxd``, hence their ``noqa: F821``.

JSON policy (the same in both twins, byte for byte):
- NaN, +inf and -inf become ``null``.
- float64 is printed as the shortest repr that round-trips (identical to Python's
  ``repr``); float32 as the shortest repr that round-trips at float32 precision
  (0.1f prints ``0.1``), with the same layout rules as ``repr``.
- bool is ``true``/``false`` (any non-zero byte is true, as Fast CDR reads it).
- byte, uint8 and the .msg ``char`` (a uint8), alone or in arrays and sequences, are
  integers; a char or wchar declared in IDL is a one-character string.
- strings are decoded as UTF-8, invalid bytes replaced by U+FFFD; one trailing NUL is
  dropped and embedded NULs are kept (as Fast CDR does). Escaping follows orjson.
- wstrings are sequences of UTF-16 code units, each carried in 4 bytes (the Fast CDR
  wire form); lone surrogates and units above 0xFFFF become U+FFFD, a leading BOM is kept.
- nested messages are objects with fields in declaration order.
- an empty message (one dummy byte on the wire) is ``{}``.
Malformed input (short buffer, bad encapsulation, sequence over its bound) raises
``CdrError``. Only plain CDR (XCDR1) in either byte order is accepted.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import struct
import sys
import threading

import orjson

try:
    import cython
except ImportError:  # pure twin running without Cython installed
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

import gateway._fast.typegraph as _typegraph

# twin: joined-begin (one compiled module in msgconv_c: setup.py drops this block)
from ._msgconv_cursor import (
    _CHAR_JSON,
    _SPARE_MAX,
    _Cursor,
)
from ._msgconv_digits import _w_f32, _w_f64
from ._msgconv_floats import _f32_text, _f64_text
from ._msgconv_tables import (
    _ARRAY,
    _IDL_KINDS,
    _K_CHAR,
    _K_MSG,
    _K_STR,
    _K_WCHAR,
    _K_WSTR,
    _KIND_SIZE,
    _MSG_KINDS,
    _SCALAR,
    _SEQ,
    _U32_LE,
    CdrError,
    UnknownTypeError,
)

# twin: joined-end

__all__ = [
    "CdrError",
    "Converter",
    "UnknownTypeError",
    "cdr_to_json",
    "converter_for",
    "converter_for_definition",
    "float32_repr",
    "float64_repr",
]


def float32_repr(value: float) -> str:
    """Shortest text that reads back as the same float32 ("null" when not finite)."""
    (bits,) = _U32_LE.unpack(struct.pack("<f", value))
    if cython.compiled:
        cur = _Cursor.__new__(_Cursor)
        cur.start(b"", 64, True)
        cur.n = _w_f32(cur.buf, bits, cur) - cur.buf
        return cur.result().decode()
    else:
        return _f32_text(bits).decode()


def float64_repr(value: float) -> str:
    """Shortest text that reads back as the same float64 ("null" when not finite)."""
    if cython.compiled:
        (bits,) = struct.unpack("<Q", struct.pack("<d", value))
        cur = _Cursor.__new__(_Cursor)
        cur.start(b"", 64, True)
        cur.n = _w_f64(cur.buf, bits, cur) - cur.buf
        return cur.result().decode()
    else:
        return _f64_text(value).decode()


# ---------------------------------------------------------------------------------------
# Plans.


class _Field:
    """One field of a plan: its JSON key prefix, element kind, shape and sub-plan."""

    def __init__(self, head, kind, shape, count, sub):
        # b'{"name":' for the first field, b',"name":' after; arrays add their '['
        self.head = head if shape == _SCALAR else head + b"["
        self.head_len = len(self.head)
        self.head_padded = self.head + bytes(32)
        self.kind = kind
        self.shape = shape  # _SCALAR, _ARRAY (count elements) or _SEQ (bound count, 0: none)
        self.count = count
        self.sub = sub
        self.min_size = _KIND_SIZE[kind] if kind != _K_MSG else sub.min_size


class _Plan:
    """Conversion plan of one message type."""

    def __init__(self, type_name, fields):
        self.type_name = type_name
        self.fields = fields
        self.empty = not fields  # CDR carries one dummy byte for a message without fields
        size = 1 if self.empty else 0
        for f in fields:
            if f.shape == _SCALAR:
                size += f.min_size
            elif f.shape == _ARRAY:
                size += f.count * f.min_size
            else:
                size += 4
        self.min_size = size


def _emit_struct(cur, plan):
    """Converts one message of ``plan`` at the cursor."""
    if plan.empty:
        cur.need(1)
        cur.pos += 1
        cur.put(b"{}")
        return 0
    for f in plan.fields:
        if cython.compiled:
            cur.put_padded(f.head_padded, f.head_len)
        else:
            cur.put(f.head)
        if f.shape == _SCALAR:
            if f.kind == _K_STR:
                cur.put_str()
            elif f.kind < _K_STR:
                cur.put_prim(f.kind)
            else:
                _emit_one(cur, f.kind, f.sub)
            continue
        count = f.count
        if f.shape == _SEQ:
            size = cur.read_u32()
            if count and size > count:
                cur.fail(f"sequence of {size} exceeds its bound {count}")
            if size * f.min_size > cur.end - cur.pos:
                cur.fail(f"sequence of {size} elements truncated")
            count = size
        if f.kind < _K_STR:
            cur.put_prims(f.kind, count)
        elif f.kind == _K_STR:
            for i in range(count):
                if i:
                    cur.put_c(44)  # ','
                cur.put_str()
        elif f.kind == _K_MSG:
            for i in range(count):
                if i:
                    cur.put_c(44)  # ','
                _emit_struct(cur, f.sub)
        else:
            for i in range(count):
                if i:
                    cur.put_c(44)  # ','
                _emit_one(cur, f.kind, f.sub)
        cur.put_c(93)  # ']'
    cur.put_c(125)  # '}'
    return 0


def _emit_one(cur, kind, sub):
    """Converts one element of any kind."""
    if kind == _K_MSG:
        _emit_struct(cur, sub)
    elif kind == _K_STR:
        cur.put_str()
    elif kind == _K_WSTR:
        cur.put_wstr()
    elif kind == _K_CHAR:
        cur.need(1)
        cur.put(_CHAR_JSON[cur.p[cur.pos]])
        cur.pos += 1
    elif kind == _K_WCHAR:
        unit = cur.read_u32()
        if 0xD800 <= unit <= 0xDFFF or unit > 0xFFFF:
            unit = 0xFFFD
        cur.put(orjson.dumps(chr(unit)))
    else:
        cur.put_prim(kind)
    return 0


class Converter:
    """Converts the CDR bytes of one message type to JSON bytes."""

    def __init__(self, type_name: str, plan: _Plan):
        self.type_name = type_name
        self.plan = plan

    def __repr__(self) -> str:
        return f"<Converter {self.type_name}>"

    def to_json(self, data):
        """JSON bytes of a CDR-encoded message (4-byte encapsulation header first)."""
        if not isinstance(data, bytes):
            data = bytes(data)
        size = len(data)
        if size < 4:
            raise CdrError(f"{size} bytes: shorter than the CDR encapsulation header")
        global _SPARE_CURSOR
        cur = _SPARE_CURSOR
        if cur is None:
            cur = _Cursor.__new__(_Cursor)
        else:
            _SPARE_CURSOR = None  # taken: a call meanwhile (another thread) makes its own
        cur.start(data, size * 2 + 64, True)
        head = cur.p  # the compiled twin reads the header bytes without int objects
        if head[0] != 0 or head[1] > 1:
            raise CdrError(f"unsupported CDR encapsulation 0x{head[0]:02x}{head[1]:02x}")
        cur.little = head[1] == 1
        _emit_struct(cur, self.plan)
        result = cur.result()
        cur.data = None  # no reference to the input or output kept between calls
        cur.p = b""
        if not cython.compiled:
            cur.out = None  # type: ignore[assignment]  # the pure twin's parts list, dropped
        if cur.cap <= _SPARE_MAX:
            _SPARE_CURSOR = cur  # reused by the next call, its output buffer with it
        return result


_SPARE_CURSOR = None  # type: _Cursor | None


# ---------------------------------------------------------------------------------------
# Plan building: from rclpy introspection or from .msg text.

_LOCK = threading.RLock()
_PLANS: dict[str, _Plan] = {}
_CONVERTERS: dict[str, Converter] = {}


_TYPE_NAME = re.compile(r"([A-Za-z]\w*)/(?:(msg|srv|action)/)?([A-Za-z]\w*)", re.ASCII)


def _canonical(type_name):
    """'pkg/msg/Type' from 'pkg/msg/Type' or 'pkg/Type' ('srv' and 'action' parts too)."""
    match = _TYPE_NAME.fullmatch(type_name.strip()) if isinstance(type_name, str) else None
    if match is None:
        raise UnknownTypeError(f"not a message type name: {type_name!r}")
    pkg, interface, type_ = match.groups()
    return f"{pkg}/{interface or 'msg'}/{type_}"


def _message_class(name):
    """The rclpy message class of a canonical type name."""
    pkg, interface, type_ = name.split("/")
    # Look before importing: only a package with generated <pkg>/<interface>/ is imported,
    # so a type name from a request cannot import an arbitrary installed module.
    try:
        spec = importlib.util.find_spec(pkg)
    except (ImportError, ValueError):
        spec = None
    locations = (spec.submodule_search_locations or []) if spec is not None else []
    if not any(os.path.isfile(os.path.join(loc, interface, "__init__.py")) for loc in locations):
        raise UnknownTypeError(f"message type {name} is not installed")
    try:
        module = importlib.import_module(f"{pkg}.{interface}")
    except ImportError as exc:
        raise UnknownTypeError(f"message type {name} is not installed") from exc
    cls = getattr(module, type_, None)
    base = type_.split("_", 1)[0]
    if cls is None and base != type_ and hasattr(module, base):
        # Service and action parts (Trigger_Request, Fibonacci_FeedbackMessage, ...)
        cls = getattr(sys.modules[getattr(module, base).__module__], type_, None)
    if cls is None or not hasattr(cls, "SLOT_TYPES"):
        raise UnknownTypeError(f"message type {name} is not installed")
    return cls


def _make_plan(name, specs):
    """Plan from (field name, kind, shape, count, sub-plan) tuples."""
    fields = []  # type: list[_Field]
    for field_name, kind, shape, count, sub in specs:
        key = orjson.dumps(field_name) + b":"
        fields.append(_Field((b"," if fields else b"{") + key, kind, shape, count, sub))
    return _Plan(name, fields)


def _plan_from_class(name):
    from rosidl_parser import (  # noqa: PLC0415 - rosidl_parser only when a plan is built
        definition as idl,
    )

    cls = _message_class(name)
    specs = []
    for field_name, slot in zip(cls.get_fields_and_field_types(), cls.SLOT_TYPES, strict=True):
        shape, count, element = _SCALAR, 0, slot
        if isinstance(slot, idl.Array):
            shape, count, element = _ARRAY, slot.size, slot.value_type
        elif isinstance(slot, idl.BoundedSequence):
            shape, count, element = _SEQ, slot.maximum_size, slot.value_type
        elif isinstance(slot, idl.UnboundedSequence):
            shape, element = _SEQ, slot.value_type
        sub = None
        if isinstance(element, idl.BasicType):
            if element.typename not in _IDL_KINDS:
                raise UnknownTypeError(f"{name}.{field_name}: unsupported {element.typename}")
            kind = _IDL_KINDS[element.typename]
        elif isinstance(element, idl.AbstractWString):
            kind = _K_WSTR
        elif isinstance(element, idl.AbstractString):
            kind = _K_STR
        elif isinstance(element, idl.NamespacedType):
            kind = _K_MSG
            sub = _plan_for("/".join([*element.namespaces, element.name]), None, None)
        else:
            raise UnknownTypeError(f"{name}.{field_name}: unsupported type {element!r}")
        specs.append((field_name, kind, shape, count, sub))
    return _make_plan(name, specs)


_MSG_FIELD = re.compile(r"([A-Za-z][\w/]*)(<=\d+)?(\[(<=)?(\d*)\])?\s+([A-Za-z]\w*)\s*(.*)",
                        re.ASCII | re.DOTALL)
_MSG_SECTION = re.compile(r"^=+\s*$\n^MSG: *(\S+) *$", re.MULTILINE)
_MSG_ALIASES = {"Header": "std_msgs/msg/Header", "time": "builtin_interfaces/msg/Time"}
_MSG_ALIASES["duration"] = "builtin_interfaces/msg/Duration"
_BUILDING = object()  # memo mark of a plan being built: meeting it again is a cycle


def _parse_msg(name, text):
    """(field name, kind, shape, count, nested type or None) of each field of .msg text."""
    specs = []
    package = name.split("/")[0]
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not line or line.startswith("#"):
            continue
        match = _MSG_FIELD.fullmatch(line)
        if match is None:
            raise UnknownTypeError(f"{name}: cannot parse {raw_line!r}")
        base, _, array_part, bounded, size, field_name, rest = match.groups()
        if rest.startswith("="):
            continue  # a constant
        shape, count = _SCALAR, 0
        if array_part:
            shape = _SEQ if (bounded or not size) else _ARRAY
            count = int(size) if size else 0
            if size and count == 0:
                raise UnknownTypeError(f"{name}.{field_name}: an array bound must be above 0")
        ref = None
        if base in _MSG_KINDS:
            kind = _MSG_KINDS[base]
        elif base == "string":
            kind = _K_STR
        elif base == "wstring":
            kind = _K_WSTR
        else:
            kind = _K_MSG
            ref = _MSG_ALIASES.get(base) or _canonical(base if "/" in base else f"{package}/{base}")
        specs.append((field_name, kind, shape, count, ref))
    return specs


def _parse_all(root, sources):
    """Parsed fields of ``root`` and of every type of ``sources`` it reaches (no recursion)."""
    parsed = {}
    pending = [root]
    while pending:
        name = pending.pop()
        if name in parsed or name not in sources:
            continue  # done, or an installed type (read by introspection)
        parsed[name] = specs = _parse_msg(name, sources[name])
        pending.extend(ref for *_, ref in specs if ref is not None)
    return parsed


def _members(parsed):
    """typegraph.Member lists of parsed definitions (for check_types)."""
    out = {}
    for name, specs in parsed.items():
        members = []
        for field_name, kind, shape, count, ref in specs:
            array = _typegraph.SEQUENCE if shape == _SEQ else (count if shape == _ARRAY else 0)
            size = _KIND_SIZE[kind] if kind < _K_STR else 4
            members.append(_typegraph.Member(field_name, ref, size, array))
        out[name] = members
    return out


def _plan_from_msg(name, parsed, memo, depth):
    """Plan of ``name`` from the parsed definitions ``parsed`` (canonical name -> fields)."""
    plan = memo.get(name)
    if plan is _BUILDING:
        raise UnknownTypeError(f"type {name} contains itself")
    if plan is not None:
        return plan
    if depth > _typegraph.LIMITS.max_depth:
        raise UnknownTypeError(f"type {name} nests deeper than {depth - 1} levels")
    memo[name] = _BUILDING
    specs = []
    for field_name, kind, shape, count, ref in parsed[name]:
        sub = None
        if ref is not None:
            if ref in parsed:
                sub = _plan_from_msg(ref, parsed, memo, depth + 1)
            else:
                sub = _plan_for(ref, None, None)
        specs.append((field_name, kind, shape, count, sub))
    memo[name] = plan = _make_plan(name, specs)
    return plan


def _plan_for(name, sources, memo):
    """Cached plan of an installed type (by introspection; ``sources`` and ``memo`` unused)."""
    plan = _PLANS.get(name)
    if plan is None:
        with _LOCK:
            plan = _PLANS.get(name)
            if plan is None:
                plan = _plan_from_class(name)
                _PLANS[name] = plan
    return plan


def converter_for(type_name: str) -> Converter:
    """Cached converter of an installed message type ('pkg/msg/Type' or 'pkg/Type')."""
    conv = _CONVERTERS.get(type_name)
    if conv is None:
        name = _canonical(type_name)
        with _LOCK:
            conv = _CONVERTERS.get(name)
            if conv is None:
                conv = Converter(name, _plan_for(name, None, None))
                _CONVERTERS[name] = conv
            _CONVERTERS[type_name] = conv
    return conv


def converter_for_definition(type_name: str, definition: str) -> Converter:
    """Converter from .msg text: the root definition, then rosbag2-style 'MSG: pkg/Type' parts;
    TypeLimitError (a ValueError) for a recursive type or one past the ros.type_limits caps."""
    name = _canonical(type_name)
    parts = _MSG_SECTION.split(definition)
    sources = {name: parts[0]}
    for i in range(1, len(parts) - 1, 2):
        sources[_canonical(parts[i])] = parts[i + 1]
    parsed = _parse_all(name, sources)
    _typegraph.check_types(name, _members(parsed), _typegraph.LIMITS.max_read_bytes)
    with _LOCK:
        return Converter(name, _plan_from_msg(name, parsed, {}, 0))


def cdr_to_json(type_name: str, data: bytes) -> bytes:
    """JSON bytes of the CDR-encoded message ``data`` of an installed type."""
    return converter_for(type_name).to_json(data)
