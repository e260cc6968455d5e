"""gateway._fast.msgconv: CDR bytes to JSON, both twins, against the stock rclpy path."""

from __future__ import annotations

import importlib
import json
import math
import os
import struct
import sys
import warnings
from array import array
from pathlib import Path
from typing import Any

import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rclpy.serialization import deserialize_message, serialize_message
from rosidl_parser.definition import (
    AbstractNestedType,
    AbstractSequence,
    AbstractString,
    AbstractWString,
    Array,
    BasicType,
    BoundedSequence,
    BoundedString,
    BoundedWString,
    NamespacedType,
)

with warnings.catch_warnings():
    # rosidl_generator_py imports lark, which imports the deprecated sre_parse module; and
    # the dispatcher warns when the compiled twin is missing (a test below checks that).
    warnings.simplefilter("ignore")
    import rosidl_generator_py  # noqa: F401

    import gateway._fast as fast
    from gateway._fast import msgconv_py

    try:
        from gateway._fast import msgconv_c
    except ImportError:
        msgconv_c = None

TWINS = [
    pytest.param(msgconv_py, id="pure"),
    pytest.param(
        msgconv_c,
        id="compiled",
        marks=pytest.mark.skipif(msgconv_c is None, reason="compiled twin not built"),
    ),
]
PACKAGES = ("std_msgs", "sensor_msgs", "geometry_msgs", "diagnostic_msgs", "test_msgs")
HYPO = settings(
    max_examples=12,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(params=TWINS)
def mc(request: pytest.FixtureRequest) -> Any:
    """The pure and the compiled twin, in turn."""
    return request.param


def _all_types() -> list[str]:
    names = []
    for pkg in PACKAGES:
        module = importlib.import_module(f"{pkg}.msg")
        for attr in sorted(dir(module)):
            if hasattr(getattr(module, attr), "SLOT_TYPES"):
                names.append(f"{pkg}/msg/{attr}")
    return names


ALL_TYPES = _all_types()


def _class(name: str) -> Any:
    pkg, interface, type_ = name.split("/")
    module = importlib.import_module(f"{pkg}.{interface}")
    if hasattr(module, type_):
        return getattr(module, type_)
    base = getattr(module, type_.split("_", 1)[0])
    return getattr(sys.modules[base.__module__], type_)


def _nested_class(t: NamespacedType) -> Any:
    return _class("/".join([*t.namespaces, t.name]))


def _fields(cls: Any) -> list[tuple[str, Any]]:
    return list(zip(cls.get_fields_and_field_types(), cls.SLOT_TYPES, strict=True))


# ---------------------------------------------------------------------------------------
# The stock path: rclpy deserialization, then a generic walk into JSON-ready values.


def stock_value(value: Any, slot: Any) -> Any:
    """JSON-ready value of one field of a deserialized rclpy message (the JSON policy)."""
    if isinstance(slot, AbstractNestedType):
        if hasattr(value, "tolist"):
            value = value.tolist()
        return [stock_value(v, slot.value_type) for v in value]
    if isinstance(slot, NamespacedType):
        return {name: stock_value(getattr(value, name), t) for name, t in _fields(type(value))}
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, bytes):  # byte fields are 1-length bytes in rclpy
        return value[0]
    return value


def stock_dict(msg: Any) -> dict[str, Any]:
    """The stock path's dict for a message."""
    return {name: stock_value(getattr(msg, name), t) for name, t in _fields(type(msg))}


def as_float32(value: Any, slot: Any) -> Any:
    """Rounds the float32 fields of a JSON-ready value to float32 (compare at that precision)."""
    if isinstance(slot, AbstractNestedType):
        return [as_float32(v, slot.value_type) for v in value]
    if isinstance(slot, NamespacedType):
        return {name: as_float32(value[name], t) for name, t in _fields(_nested_class(slot))}
    if isinstance(slot, BasicType) and slot.typename == "float" and value is not None:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    return value


def compare_with_stock(mc: Any, name: str, msg: Any, data: bytes | None = None) -> bytes:
    """Converts ``msg`` (or ``data``) with ``mc`` and checks it value for value against stock."""
    cls = type(msg)
    data = serialize_message(msg) if data is None else data
    out = mc.converter_for(name).to_json(data)
    ours, ref = json.loads(out), stock_dict(deserialize_message(data, cls))
    slot = NamespacedType(name.split("/")[:2], name.split("/")[2])
    assert as_float32(ours, slot) == as_float32(ref, slot)
    assert list(ours) == list(ref)  # fields in declaration order
    return out


# ---------------------------------------------------------------------------------------
# Random messages, and an independent CDR encoder (for big-endian streams).

TEXT = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
# rclpy drops a leading byte-order mark of a wstring; keep it out of the comparisons.
WTEXT = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\ufeff\ufffe")
INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "uint8": (0, 2**8 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint64": (0, 2**64 - 1),
}
_strategies: dict[Any, st.SearchStrategy[Any]] = {}
# Longest sequence drawn at each nesting depth, and the depth from which nested messages
# keep their defaults: keeps MultiNested-like types within Hypothesis' size budget.
SEQ_SIZES = (6, 2)
RANDOM_DEPTH = 2


def _element_strategy(t: Any, depth: int) -> st.SearchStrategy[Any]:
    if isinstance(t, NamespacedType):
        if depth + 1 >= RANDOM_DEPTH:
            return st.builds(_nested_class(t))
        return message_strategy(_nested_class(t), depth + 1)
    if isinstance(t, AbstractWString):
        size = t.maximum_size if isinstance(t, BoundedWString) else 12
        return st.text(WTEXT, max_size=size)
    if isinstance(t, AbstractString):
        size = t.maximum_size if isinstance(t, BoundedString) else 12
        return st.text(TEXT, max_size=size)
    name = t.typename
    if name == "boolean":
        return st.booleans()
    if name == "octet":
        return st.binary(min_size=1, max_size=1)
    if name == "float":
        return st.floats(width=32)
    if name == "double":
        return st.floats()
    low, high = INT_RANGES[name]
    return st.integers(low, high)


def _field_strategy(slot: Any, depth: int) -> st.SearchStrategy[Any]:
    if isinstance(slot, Array):
        element = _element_strategy(slot.value_type, depth)
        return st.lists(element, min_size=slot.size, max_size=slot.size)
    if isinstance(slot, AbstractSequence):
        size = SEQ_SIZES[min(depth, len(SEQ_SIZES) - 1)]
        if isinstance(slot, BoundedSequence):
            size = min(size, slot.maximum_size)
        return st.lists(_element_strategy(slot.value_type, depth), max_size=size)
    return _element_strategy(slot, depth)


def message_strategy(cls: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """Random instances of a message class, every field set."""
    strategy = _strategies.get((cls, depth))
    if strategy is None:
        fields = {name: _field_strategy(slot, depth) for name, slot in _fields(cls)}
        strategy = st.fixed_dictionaries(fields).map(lambda kwargs: cls(**kwargs))
        _strategies[cls, depth] = strategy
    return strategy


class CdrWriter:
    """Plain CDR encoder of rclpy messages, in either byte order."""

    CODES = {
        "boolean": "?",
        "octet": "B",
        "uint8": "B",
        "int8": "b",
        "int16": "h",
        "uint16": "H",
        "int32": "i",
        "uint32": "I",
        "int64": "q",
        "uint64": "Q",
        "float": "f",
        "double": "d",
    }

    def __init__(self, little: bool) -> None:
        self.order = "<" if little else ">"
        self.buf = bytearray(b"\x00\x01\x00\x00" if little else b"\x00\x00\x00\x00")

    def put(self, code: str, value: Any) -> None:
        size = struct.calcsize(code)
        self.buf += bytes(-(len(self.buf) - 4) % size)
        self.buf += struct.pack(self.order + code, value)

    def message(self, msg: Any) -> CdrWriter:
        fields = _fields(type(msg))
        if not fields:
            self.put("B", 0)
        for name, slot in fields:
            self.field(getattr(msg, name), slot)
        return self

    def field(self, value: Any, slot: Any) -> None:
        if isinstance(slot, AbstractNestedType):
            if not isinstance(slot, Array):
                self.put("I", len(value))
            for item in value:
                self.element(item, slot.value_type)
        else:
            self.element(value, slot)

    def element(self, value: Any, t: Any) -> None:
        if isinstance(t, NamespacedType):
            self.message(value)
        elif isinstance(t, AbstractWString):
            units = array("H", value.encode("utf-16-le"))
            if sys.byteorder != "little":
                units.byteswap()
            self.put("I", len(units))
            for unit in units:
                self.put("I", unit)
        elif isinstance(t, AbstractString):
            raw = value.encode() + b"\x00"
            self.put("I", len(raw))
            self.buf += raw
        elif t.typename == "octet":
            self.put("B", value[0] if isinstance(value, bytes) else value)
        else:
            self.put(self.CODES[t.typename], value)


# ---------------------------------------------------------------------------------------
# Dispatcher and build.


def test_dispatcher_reports_the_loaded_twin() -> None:
    assert fast.MSGCONV_IMPL in ("compiled", "pure")
    expected = msgconv_c if fast.MSGCONV_IMPL == "compiled" else msgconv_py
    assert fast.msgconv is expected
    assert fast.cdr_to_json is expected.cdr_to_json
    assert fast.CdrError is expected.CdrError


def test_compiled_twin_is_loaded_when_required() -> None:
    if os.environ.get("DIAG_GATEWAY_REQUIRE_EXT") != "1":
        pytest.skip("DIAG_GATEWAY_REQUIRE_EXT is not set")
    assert msgconv_c is not None, "gateway._fast.msgconv_c is not built"
    assert fast.MSGCONV_IMPL == "compiled", "the dispatcher did not load msgconv_c"
    assert Path(msgconv_c.__file__).suffix in (".so", ".pyd")


def test_compiled_twin_is_compiled() -> None:
    if msgconv_c is None:
        pytest.skip("compiled twin not built")
    assert Path(msgconv_c.__file__).suffix in (".so", ".pyd")
    assert Path(msgconv_py.__file__).suffix == ".py"


# ---------------------------------------------------------------------------------------
# Equivalence with the stock path, every type of five packages, random values.


@pytest.mark.parametrize("name", ALL_TYPES)
def test_random_messages_equal_the_stock_path(mc: Any, name: str) -> None:
    @HYPO
    @given(message_strategy(_class(name)))
    def check(msg: Any) -> None:
        compare_with_stock(mc, name, msg)

    check()


@pytest.mark.parametrize("name", [n for n in ALL_TYPES if n.startswith("test_msgs/")])
def test_test_msgs_big_endian_equals_little_endian(mc: Any, name: str) -> None:
    @HYPO
    @given(message_strategy(_class(name)))
    def check(msg: Any) -> None:
        conv = mc.converter_for(name)
        expected = conv.to_json(serialize_message(msg))
        assert conv.to_json(bytes(CdrWriter(little=True).message(msg).buf)) == expected
        assert conv.to_json(bytes(CdrWriter(little=False).message(msg).buf)) == expected

    check()


def test_twins_agree_byte_for_byte() -> None:
    if msgconv_c is None:
        pytest.skip("compiled twin not built")

    @settings(HYPO, max_examples=200)
    @given(
        st.sampled_from(ALL_TYPES).flatmap(
            lambda n: st.tuples(st.just(n), message_strategy(_class(n)))
        )
    )
    def check(case: tuple[str, Any]) -> None:
        name, msg = case
        data = serialize_message(msg)
        pure = msgconv_py.converter_for(name).to_json(data)
        assert msgconv_c.converter_for(name).to_json(data) == pure

    check()


@pytest.mark.parametrize(
    "name",
    [
        "test_msgs/srv/BasicTypes_Request",
        "test_msgs/srv/Arrays_Response",
        "test_msgs/action/Fibonacci_FeedbackMessage",
        "test_msgs/action/NestedMessage_Goal",
    ],
)
def test_service_and_action_parts(mc: Any, name: str) -> None:
    @HYPO
    @given(message_strategy(_class(name)))
    def check(msg: Any) -> None:
        compare_with_stock(mc, name, msg)

    check()


def _definition(name: str) -> str:
    """rosbag2-style schema text: the root .msg, then every dependency once."""
    root = Path(sys.prefix, "share")
    pkg, _, type_ = name.split("/")
    text = (root / pkg / "msg" / f"{type_}.msg").read_text()
    deps: list[str] = []

    def walk(cls: Any) -> None:
        for _, slot in _fields(cls):
            t = slot.value_type if isinstance(slot, AbstractNestedType) else slot
            if isinstance(t, NamespacedType):
                dep = "/".join([*t.namespaces, t.name])
                if dep not in deps:
                    deps.append(dep)
                    walk(_nested_class(t))

    walk(_class(name))
    for dep in sorted(deps):
        dep_pkg, _, dep_type = dep.split("/")
        body = (root / dep_pkg / "msg" / f"{dep_type}.msg").read_text()
        text += "\n" + "=" * 80 + f"\nMSG: {dep_pkg}/{dep_type}\n" + body
    return text


def _plan_shape(plan: Any) -> list[Any]:
    return [(f.head, f.kind, f.shape, f.count, f.sub and _plan_shape(f.sub)) for f in plan.fields]


def _has_msg_file(name: str) -> bool:
    pkg, _, type_ = name.split("/")
    return Path(sys.prefix, "share", pkg, "msg", f"{type_}.msg").is_file()


@pytest.mark.parametrize("name", [n for n in ALL_TYPES if _has_msg_file(n)])
def test_plan_from_msg_definition_equals_introspection(mc: Any, name: str) -> None:
    conv = mc.converter_for_definition(name, _definition(name))
    assert _plan_shape(conv.plan) == _plan_shape(mc.converter_for(name).plan)

    @settings(HYPO, max_examples=2)
    @given(message_strategy(_class(name)))
    def check(msg: Any) -> None:
        data = serialize_message(msg)
        assert conv.to_json(data) == mc.converter_for(name).to_json(data)

    check()


# ---------------------------------------------------------------------------------------
# The JSON policy, case by case.


def _basic(**values: Any) -> bytes:
    from test_msgs.msg import BasicTypes

    return serialize_message(BasicTypes(**values))


def _convert(mc: Any, name: str, data: bytes) -> Any:
    return json.loads(mc.converter_for(name).to_json(data))


def test_non_finite_floats_are_null(mc: Any) -> None:
    from test_msgs.msg import UnboundedSequences

    out = _convert(
        mc, "test_msgs/BasicTypes", _basic(float32_value=math.nan, float64_value=-math.inf)
    )
    assert out["float32_value"] is None and out["float64_value"] is None
    msg = UnboundedSequences(
        float32_values=[math.inf, 1.5, math.nan], float64_values=[math.nan, -0.0, math.inf]
    )
    out = _convert(mc, "test_msgs/UnboundedSequences", serialize_message(msg))
    assert out["float32_values"] == [None, 1.5, None]
    assert out["float64_values"] == [None, 0.0, None]


def test_longest_float_texts_fill_long_arrays(mc: Any) -> None:
    # Arrays reserve their output room per element: every element here has the longest text.
    from test_msgs.msg import UnboundedSequences

    f32 = [-1.2345678e15, -3.4028235e38, -1.1754944e-38] * 100
    f64 = [-2.2250738585072014e-308, -1234567890123456.8, -0.0001234567890123456] * 100
    msg = UnboundedSequences(float32_values=f32, float64_values=f64)
    data = serialize_message(msg)
    text = mc.converter_for("test_msgs/UnboundedSequences").to_json(data)
    assert b"-1234567800000000.0,-3.4028235e+38,-1.1754944e-38," in text
    assert b"-2.2250738585072014e-308,-1234567890123456.8,-0.0001234567890123456," in text
    out = json.loads(text)
    assert out["float64_values"] == f64
    assert numpy.array_equal(numpy.float32(out["float32_values"]), numpy.float32(f32))


def test_float_texts(mc: Any) -> None:
    conv = mc.converter_for("test_msgs/BasicTypes")
    text = conv.to_json(_basic(float32_value=0.1, float64_value=0.1))
    assert b'"float32_value":0.1,' in text and b'"float64_value":0.1,' in text
    text = conv.to_json(_basic(float32_value=-0.0, float64_value=1e-7))
    assert b'"float32_value":-0.0,' in text and b'"float64_value":1e-07,' in text
    text = conv.to_json(_basic(float32_value=1e20, float64_value=1e16))
    assert b'"float32_value":1e+20,' in text and b'"float64_value":1e+16,' in text
    text = conv.to_json(_basic(float32_value=16777216.0, float64_value=123456789.0))
    assert b'"float32_value":16777216.0,' in text and b'"float64_value":123456789.0,' in text


@settings(HYPO, max_examples=400)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float64_text_is_python_repr(x: float) -> None:
    for twin in (msgconv_py, msgconv_c):
        if twin is not None:
            assert twin.float64_repr(x) == repr(x)


def _pure_f64_digits(x: float) -> str:
    """Text of x from the pure twin's own shortest-digit search (not repr)."""
    from gateway._fast import _msgconv_floats as floats

    (bits,) = struct.unpack("<Q", struct.pack("<d", abs(x)))
    out = floats._Decimal()
    floats._f64_shortest(bits, out)
    return floats._decimal_text(x < 0, out.sig, out.exp10).decode()


@settings(HYPO, max_examples=400)
@given(st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: x != 0))
def test_pure_float64_digit_search_is_python_repr(x: float) -> None:
    assert _pure_f64_digits(x) == repr(x)


def test_float64_digit_search_edges() -> None:
    edges = [5e-324, 2.2250738585072014e-308, 2.225073858507201e-308, 1.7976931348623157e308,
             0.0025, 0.0004, 9.81, 1e23, 2.0**53, 9007199254740993.0, 123e15, 0.3]
    edges += [2.0**e for e in range(-1074, 1024, 7)] + [float(10**e) for e in range(0, 300, 7)]
    for x in edges + [-x for x in edges]:
        assert _pure_f64_digits(x) == repr(x)
        if msgconv_c is not None:
            assert msgconv_c.float64_repr(x) == repr(x)


def test_float64_subnormals_are_python_repr() -> None:
    # One digit search for every double: the smallest subnormals have the widest intervals.
    patterns = [*range(1, 3000), *(1 << e for e in range(52)), (1 << 52) - 1, 0x000FFFFFFFFFFFF0]
    for bits in patterns:
        (x,) = struct.unpack("<d", struct.pack("<Q", bits))
        assert _pure_f64_digits(x) == repr(x)
        if msgconv_c is not None:
            assert msgconv_c.float64_repr(-x) == repr(-x)


def _shortest_f32(x: float) -> str:
    """Digits of numpy's shortest float32 text, without sign, point, exponent or outer zeros."""
    text = numpy.format_float_scientific(numpy.float32(x), unique=True)
    return text.split("e")[0].replace("-", "").replace(".", "").strip("0")


def test_float32_subnormals_and_edges_are_shortest() -> None:
    patterns = [*range(1, 2000), *(1 << e for e in range(31)), 0x7F7FFFFF, 0x00800000, 0x007FFFFF]
    patterns += [(e << 23) | m for e in range(1, 255, 3) for m in (0, 1, 0x400000, 0x7FFFFF)]
    for bits in patterns:
        (x,) = struct.unpack("<f", struct.pack("<I", bits))
        digits = _shortest_f32(x)
        for twin in (msgconv_py, msgconv_c):
            if twin is None:
                continue
            text = twin.float32_repr(x)
            assert numpy.float32(float(text)) == numpy.float32(x)
            mantissa = text.split("e")[0].replace("-", "").replace(".", "").strip("0")
            assert mantissa == digits, (bits, text)


@settings(HYPO, max_examples=400)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_float32_text_is_shortest_round_trip(x: float) -> None:
    expected = numpy.format_float_scientific(numpy.float32(x), unique=True)
    digits = expected.split("e")[0].replace("-", "").replace(".", "").strip("0") or "0"
    for twin in (msgconv_py, msgconv_c):
        if twin is None:
            continue
        text = twin.float32_repr(x)
        assert numpy.float32(float(text)) == numpy.float32(x) or x == 0
        mantissa = text.split("e")[0].replace("-", "").replace(".", "").strip("0") or "0"
        assert len(mantissa) <= len(digits)
        assert text == msgconv_py.float32_repr(x)


def _f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def test_float32_arrays_edges_and_sweep(mc: Any) -> None:
    """float32 arrays (the specialised digit search and text writer): edge values, then bit
    patterns across every exponent; each text reads back as the same float32 and is no
    longer than the repr of the widened float64 value."""
    from test_msgs.msg import UnboundedSequences

    conv = mc.converter_for("test_msgs/UnboundedSequences")
    edges = [0x00000001, 0x00000002, 0x007FFFFF, 0x00800000, 0x00800001, 0x7F7FFFFF, 0x3F800000,
             0x3DCCCCCD, 0x4B800000, 0x4B7FFFFF, 0x5A0E1BCA, 0x2F000000]
    edges += [b | 0x80000000 for b in edges] + [0x80000000, 0x00000000]
    sweep = list(range(1, 0x7F800000, 0x7F800000 // 4001)) + [0x3F000000 + i for i in range(300)]
    bits = edges + sweep + [b | 0x80000000 for b in sweep[::7]]
    values = [_f32(b) for b in bits]
    special = [math.nan, math.inf, -math.inf, 1.5, -0.0, 0.0]
    data = serialize_message(UnboundedSequences(float32_values=values + special))
    out = json.loads(conv.to_json(data), parse_constant=lambda c: pytest.fail(c))
    texts = conv.to_json(data).split(b'"float32_values":[', 1)[1].split(b"]", 1)[0].split(b",")
    assert out["float32_values"][-6:] == [None, None, None, 1.5, -0.0, 0.0]
    assert texts[-6:] == [b"null", b"null", b"null", b"1.5", b"-0.0", b"0.0"]
    for b, x, text, got in zip(bits, values, texts, out["float32_values"], strict=False):
        assert numpy.float32(got) == numpy.float32(x), (hex(b), text)
        assert math.copysign(1.0, got) == math.copysign(1.0, x), (hex(b), text)
        mantissa = text.split(b"e")[0].lstrip(b"-").replace(b".", b"").strip(b"0") or b"0"
        widened = repr(x).split("e")[0].lstrip("-").replace(".", "").strip("0") or "0"
        assert len(mantissa) <= len(widened), (hex(b), text, repr(x))
        assert text.decode() == msgconv_py.float32_repr(x), hex(b)
        if abs(x) < 1e16 and abs(x) >= 1e-4 or x == 0:
            assert b"e" not in text  # laid out as Python's repr does
        else:
            assert b"e" in text


def test_integers_bools_and_bytes(mc: Any) -> None:
    out = _convert(
        mc,
        "test_msgs/BasicTypes",
        _basic(
            bool_value=True,
            byte_value=b"\xff",
            char_value=200,
            int8_value=-128,
            uint8_value=255,
            int16_value=-32768,
            uint16_value=65535,
            int32_value=-(2**31),
            uint32_value=2**32 - 1,
            int64_value=-(2**63),
            uint64_value=2**64 - 1,
        ),
    )
    assert out == {
        "bool_value": True,
        "byte_value": 255,
        "char_value": 200,
        "float32_value": 0.0,
        "float64_value": 0.0,
        "int8_value": -128,
        "uint8_value": 255,
        "int16_value": -32768,
        "uint16_value": 65535,
        "int32_value": -(2**31),
        "uint32_value": 2**32 - 1,
        "int64_value": -(2**63),
        "uint64_value": 2**64 - 1,
    }


def test_any_nonzero_bool_byte_is_true(mc: Any) -> None:
    data = bytearray(_basic())
    data[4] = 7
    assert _convert(mc, "test_msgs/BasicTypes", bytes(data))["bool_value"] is True


def test_byte_and_uint8_arrays_are_integer_arrays(mc: Any) -> None:
    from std_msgs.msg import ByteMultiArray, UInt8MultiArray
    from test_msgs.msg import Arrays

    out = _convert(
        mc,
        "std_msgs/ByteMultiArray",
        serialize_message(ByteMultiArray(data=[b"\x00", b"\x7f", b"\xff"])),
    )
    assert out["data"] == [0, 127, 255]
    out = _convert(
        mc, "std_msgs/UInt8MultiArray", serialize_message(UInt8MultiArray(data=list(range(256))))
    )
    assert out["data"] == list(range(256))
    out = _convert(
        mc, "test_msgs/Arrays", serialize_message(Arrays(byte_values=[b"a", b"b", b"c"]))
    )
    assert out["byte_values"] == [97, 98, 99]


def _string_cdr(payload: bytes, little: bool = True) -> bytes:
    header = b"\x00\x01\x00\x00" if little else b"\x00\x00\x00\x00"
    return header + struct.pack("<I" if little else ">I", len(payload)) + payload


def test_strings(mc: Any) -> None:
    conv = mc.converter_for("std_msgs/String")
    assert conv.to_json(_string_cdr(b"plain\x00")) == b'{"data":"plain"}'
    assert conv.to_json(_string_cdr(b"no terminator")) == b'{"data":"no terminator"}'
    assert conv.to_json(_string_cdr(b"")) == b'{"data":""}'
    assert conv.to_json(_string_cdr(b"a\x00b\x00")) == b'{"data":"a\\u0000b"}'
    assert conv.to_json(_string_cdr(b'q"b\\\n\t\x01\x7f\x00')) == (
        b'{"data":"q\\"b\\\\\\n\\t\\u0001\x7f"}'
    )
    assert json.loads(conv.to_json(_string_cdr(b"ok \xff\xfe end\x00")))["data"] == (
        "ok \ufffd\ufffd end"
    )
    text = "héllo wörld ✓ 😀"
    assert json.loads(conv.to_json(_string_cdr(text.encode() + b"\x00")))["data"] == text
    assert conv.to_json(_string_cdr(b"big endian\x00", little=False)) == b'{"data":"big endian"}'


def test_a_failed_conversion_leaves_the_next_one_right_and_no_input_is_kept(mc: Any) -> None:
    conv = mc.converter_for("std_msgs/String")
    good = _string_cdr(b"plain\x00")
    with pytest.raises(mc.CdrError):
        conv.to_json(good[:-3])
    before = sys.getrefcount(good)
    assert conv.to_json(good) == b'{"data":"plain"}'
    assert conv.to_json(_string_cdr(b"x" * 3_000_000)) == b'{"data":"' + b"x" * 3_000_000 + b'"}'
    assert conv.to_json(good) == b'{"data":"plain"}'
    assert sys.getrefcount(good) == before  # the converter keeps no reference to its input


def test_string_tails_and_trailing_input(mc: Any) -> None:
    """Every length and every position of a byte that needs escaping, with and without input
    after the string (the last bytes of a string may be read as one word with what follows)."""
    from std_msgs.msg import String
    from test_msgs.msg import Strings

    strings = mc.converter_for("test_msgs/Strings")
    one = mc.converter_for("std_msgs/String")
    for size in range(0, 26):
        base = "abcdefghijklmnopqrstuvwxyz"[:size]
        variants = [base] + [base[:i] + c + base[i + 1 :] for i in range(size) for c in '"\\\x01\x7fé']
        for text in variants:
            expected = json.dumps(text, ensure_ascii=False, separators=(",", ":"))
            alone = one.to_json(serialize_message(String(data=text)))  # nothing after it
            assert alone == b'{"data":' + expected.encode() + b"}", text
            # followed by strings full of bytes that would need escaping
            msg = Strings(string_value=text, bounded_string_value='"\\\x01"')
            out = json.loads(strings.to_json(serialize_message(msg)))
            assert out["string_value"] == text and out["bounded_string_value"] == '"\\\x01"'


def _wstring_cdr(units: list[int]) -> bytes:
    from test_msgs.msg import WStrings

    tail = serialize_message(WStrings(wstring_value=""))[8:]
    return b"\x00\x01\x00\x00" + struct.pack(f"<{len(units) + 1}I", len(units), *units) + tail


def test_wstrings(mc: Any) -> None:
    conv = mc.converter_for("test_msgs/WStrings")
    ok = [0x68, 0xE9, 0xD83D, 0xDE00]  # "hé😀" as UTF-16 code units
    assert _convert(mc, "test_msgs/WStrings", _wstring_cdr(ok))["wstring_value"] == "hé😀"
    bad = [0xFEFF, 0x61, 0xD800, 0x62, 0x1F600, 0xDC00]
    assert json.loads(conv.to_json(_wstring_cdr(bad)))["wstring_value"] == (
        "\ufeffa\ufffdb\ufffd\ufffd"
    )


def test_empty_message_is_an_empty_object(mc: Any) -> None:
    from std_msgs.msg import Empty

    assert mc.converter_for("std_msgs/msg/Empty").to_json(serialize_message(Empty())) == b"{}"


def test_idl_char_and_wchar_are_one_character_strings(mc: Any) -> None:
    # No installed message declares IDL char/wchar; a hand-made plan covers the wire form.
    p = msgconv_py
    plan = mc._make_plan(
        "x/msg/Chars",
        [
            ("c", p._K_CHAR, p._SCALAR, 0, None),
            ("w", p._K_WCHAR, p._SCALAR, 0, None),
            ("cs", p._K_CHAR, p._SEQ, 0, None),
        ],
    )
    conv = mc.Converter("x/msg/Chars", plan)
    data = b"\x00\x01\x00\x00" + b"A\x00\x00\x00" + struct.pack("<II", 0xE9, 3) + b'a"\xe9'
    assert json.loads(conv.to_json(data)) == {"c": "A", "w": "é", "cs": ["a", '"', "é"]}


def test_type_names_and_unknown_types(mc: Any) -> None:
    assert mc.converter_for("std_msgs/String") is mc.converter_for("std_msgs/msg/String")
    assert mc.converter_for("std_msgs/String").type_name == "std_msgs/msg/String"
    bad_names = (
        "nope_msgs/msg/Nope",
        "std_msgs/msg/Nope",
        "String",
        "a/b/c/d",
        "",
        "../x/y",
        "json/msg/Nope",
        "os/msg/path",
        "std_msgs/msg/String/x",
    )
    for bad in bad_names:
        with pytest.raises(mc.UnknownTypeError):
            mc.converter_for(bad)


def test_bytes_like_input_and_cdr_to_json(mc: Any) -> None:
    data = _string_cdr(b"x\x00")
    expected = b'{"data":"x"}'
    assert mc.cdr_to_json("std_msgs/msg/String", data) == expected
    conv = mc.converter_for("std_msgs/msg/String")
    assert conv.to_json(bytearray(data)) == expected
    assert conv.to_json(memoryview(data)) == expected


def test_bench_messages_equal_the_stock_path(mc: Any) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    try:
        from msgconv import messages
    finally:
        sys.path.pop(0)
    for name, msg in messages():
        compare_with_stock(mc, name, msg)


# ---------------------------------------------------------------------------------------
# Malformed input: a clean CdrError, never a crash or an out-of-bounds read.


def test_cdr_error_is_a_value_error(mc: Any) -> None:
    assert issubclass(mc.CdrError, ValueError)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        b"\x00\x01\x00",
        b"\x01\x00\x00\x00",
        b"\x00\x03\x00\x00\x00\x00\x00\x00",
        b"\x00\x07\x00\x00\x00\x00\x00\x00",
    ],
)
def test_bad_headers(mc: Any, data: bytes) -> None:
    with pytest.raises(mc.CdrError):
        mc.converter_for("std_msgs/String").to_json(data)


def test_sequence_over_its_bound(mc: Any) -> None:
    from test_msgs.msg import BoundedPlainSequences

    data = bytearray(serialize_message(BoundedPlainSequences(bool_values=[True] * 3)))
    data[4] = 4  # bool_values: sequence<boolean, 3>
    with pytest.raises(mc.CdrError, match="bound"):
        mc.converter_for("test_msgs/BoundedPlainSequences").to_json(bytes(data) + bytes(64))


def test_huge_lengths_fail_fast(mc: Any) -> None:
    for name in (
        "std_msgs/String",
        "std_msgs/Float64MultiArray",
        "sensor_msgs/PointCloud2",
        "diagnostic_msgs/DiagnosticArray",
        "test_msgs/UnboundedSequences",
    ):
        conv = mc.converter_for(name)
        for fill in (b"\xff", b"\x7f", b"\x01"):
            with pytest.raises(mc.CdrError):
                conv.to_json(b"\x00\x01\x00\x00" + fill * 64)


def _samples() -> list[tuple[str, bytes]]:
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
    from sensor_msgs.msg import Imu, JointState
    from test_msgs.msg import Arrays, BoundedSequences, MultiNested, Strings, WStrings

    status = DiagnosticStatus(name="n", message="m", values=[KeyValue(key="k", value="v")])
    msgs = {
        "sensor_msgs/msg/JointState": JointState(name=["a", "b"], position=[1.0, 2.0]),
        "sensor_msgs/msg/Imu": Imu(),
        "diagnostic_msgs/msg/DiagnosticArray": DiagnosticArray(status=[status, status]),
        "test_msgs/msg/Arrays": Arrays(),
        "test_msgs/msg/BoundedSequences": BoundedSequences(
            int16_values=[1, 2], string_values=["x"]
        ),
        "test_msgs/msg/MultiNested": MultiNested(),
        "test_msgs/msg/Strings": Strings(string_value="hello"),
        "test_msgs/msg/WStrings": WStrings(wstring_value="wide"),
    }
    return [(name, serialize_message(msg)) for name, msg in msgs.items()]


SAMPLES = _samples()


def _converts_or_rejects(mc: Any, name: str, data: bytes) -> None:
    try:
        out = mc.converter_for(name).to_json(data)
    except mc.CdrError:
        return
    json.loads(out)  # whatever is accepted is valid JSON


@pytest.mark.parametrize("name,data", SAMPLES, ids=[n for n, _ in SAMPLES])
def test_every_truncation_is_rejected_cleanly(mc: Any, name: str, data: bytes) -> None:
    sizes = (
        range(len(data))
        if len(data) <= 512
        else [*range(0, len(data), 7), *range(len(data) - 64, len(data))]
    )
    for size in sizes:
        _converts_or_rejects(mc, name, data[:size])
    mc.converter_for(name).to_json(data)


@settings(HYPO, max_examples=300)
@given(st.sampled_from(SAMPLES), st.data())
def test_fuzzed_bytes_never_crash(case: tuple[str, bytes], data: st.DataObject) -> None:
    name, good = case
    flips = data.draw(
        st.lists(
            st.tuples(st.integers(4, len(good) - 1), st.integers(0, 255)), min_size=1, max_size=8
        )
    )
    mutated = bytearray(good)
    for index, value in flips:
        mutated[index] = value
    noise = data.draw(st.binary(max_size=64))
    for twin in (msgconv_py, msgconv_c):
        if twin is not None:
            _converts_or_rejects(twin, name, bytes(mutated))
            _converts_or_rejects(twin, name, b"\x00\x01\x00\x00" + noise)
            _converts_or_rejects(twin, name, b"\x00\x00\x00\x00" + noise)
