"""Float text of both msgconv twins: float64 against ``repr``, float32 against numpy's
shortest digits and twin against twin; many values of every kind, seeded."""

from __future__ import annotations

import random
import struct
import warnings

import numpy
import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the dispatcher warns when the compiled twin is missing
    from gateway._fast import _msgconv_floats as floats
    from gateway._fast import msgconv_py

    try:
        from gateway._fast import msgconv_c
    except ImportError:
        msgconv_c = None

_TO_BITS = struct.Struct("<d")
_FROM_BITS = struct.Struct("<Q")
_MAX_FINITE = 0x7FEFFFFFFFFFFFFF


def _double(bits: int) -> float:
    return _TO_BITS.unpack(_FROM_BITS.pack(bits))[0]


def _bits(x: float) -> int:
    return _FROM_BITS.unpack(_TO_BITS.pack(x))[0]


def _doubles(count: int, seed: int) -> list[float]:
    """Finite non-zero doubles: random bit patterns, short decimals and their neighbours,
    powers of two and ten, subnormals, mantissas near their ends, robot-like readings."""
    rnd = random.Random(seed)
    out: list[int] = []
    for e in range(-325, 309):
        near = _bits(float(f"1e{e}"))
        out += [near - 1, near, near + 1]
    out += [e << 52 for e in range(1, 2047)]  # powers of two: the shorter interval
    out += [(e << 52) | 1 for e in range(1, 2047)] + [(e << 52) - 1 for e in range(2, 2048)]
    while len(out) < count:
        kind = len(out) % 6
        if kind == 0:
            bits = rnd.getrandbits(63)
        elif kind == 1:  # subnormal
            bits = rnd.getrandbits(rnd.randrange(1, 53))
        elif kind == 2:  # a mantissa with few bits set: ties and integers
            bits = (rnd.randrange(1, 2047) << 52) | rnd.getrandbits(rnd.choice((1, 2, 3, 8, 20)))
        elif kind == 3:  # a short decimal and its neighbours: the big-divisor branch
            digits = rnd.randrange(1, 10 ** rnd.randrange(1, 17))
            near = _bits(float(f"{digits}e{rnd.randrange(-330, 300)}"))
            bits = near + rnd.choice((-1, 0, 0, 1))
        elif kind == 4:  # joint angles, velocities, efforts
            bits = _bits(abs(rnd.uniform(-50.0, 50.0)) * rnd.choice((1.0, 0.01, 1e-5)))
        else:  # an integer-valued double
            bits = _bits(float(rnd.randrange(1, 1 << 53)) * 2.0 ** rnd.randrange(-8, 60))
        out.append(bits)
    xs = [_double(b) for b in out if 0 < b <= _MAX_FINITE]
    return xs + [-x for x in xs[::7]]


def _pure_text(x: float) -> str:
    """Text of x from the pure twin's own shortest-digit search (not repr)."""
    out = floats._Decimal()
    floats._f64_shortest(_bits(abs(x)), out)
    return floats._decimal_text(x < 0, out.sig, out.exp10).decode()


def test_pure_float64_digit_search_is_repr_on_many_doubles() -> None:
    for x in _doubles(30_000, seed=17):
        assert _pure_text(x) == repr(x), hex(_bits(x))


@pytest.mark.skipif(msgconv_c is None, reason="compiled twin not built")
def test_compiled_float64_text_is_repr_on_many_doubles() -> None:
    assert msgconv_c is not None
    text = msgconv_c.float64_repr
    for seed in (1, 2, 3):
        for x in _doubles(200_000, seed=seed):
            assert text(x) == repr(x), hex(_bits(x))


def _float32s(count: int, seed: int) -> list[float]:
    """Finite float32 values: random bit patterns, subnormals, mantissas with few bits set."""
    rnd = random.Random(seed)
    out = []
    for i in range(count):
        if i % 3 == 0:
            bits = rnd.getrandbits(31)
        elif i % 3 == 1:
            bits = rnd.getrandbits(rnd.randrange(1, 24))
        else:
            bits = (rnd.randrange(1, 255) << 23) | rnd.getrandbits(rnd.choice((1, 3, 10, 23)))
        if bits and (bits >> 23) != 0xFF:
            out.append(struct.unpack("<f", struct.pack("<I", bits | (i & 1) << 31))[0])
    return out


def test_float32_text_is_shortest_and_twins_agree_on_many_values() -> None:
    for x in _float32s(20_000, seed=5):
        text = msgconv_py.float32_repr(x)
        assert numpy.float32(float(text)) == numpy.float32(x)
        expected = numpy.format_float_scientific(numpy.float32(x), unique=True)
        digits = expected.split("e")[0].replace("-", "").replace(".", "").strip("0")
        assert text.split("e")[0].replace("-", "").replace(".", "").strip("0") == digits, text
        if msgconv_c is not None:
            assert msgconv_c.float32_repr(x) == text
