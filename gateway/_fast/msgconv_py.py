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
from array import array

import orjson

try:
    import cython
except ImportError:  # pure twin running without Cython installed
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

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


class CdrError(ValueError):
    """The bytes are not a valid CDR encoding of the message type."""


class UnknownTypeError(ValueError):
    """The message type is not installed or its definition is incomplete."""


# Element kinds. Primitives first, in the order of the tables below.
_K_BOOL = 0
_K_U8 = 1  # byte (octet), .msg char, uint8
_K_I8 = 2
_K_I16 = 3
_K_U16 = 4
_K_I32 = 5
_K_U32 = 6
_K_I64 = 7
_K_U64 = 8
_K_F32 = 9
_K_F64 = 10
_K_STR = 11
_K_WSTR = 12
_K_CHAR = 13  # IDL char: one byte, a one-character string
_K_WCHAR = 14  # IDL wchar: one UTF-16 code unit in 4 bytes, a one-character string
_K_MSG = 15

_KIND_SIZE = (1, 1, 1, 2, 2, 4, 4, 8, 8, 4, 8, 4, 4, 1, 4, 1)
_KIND_SIGNED = (False, False, True, True, False, True, False, True, False, False, False)
# Room reserved per element (text and comma); floats: see w_decimal.
_KIND_MAXTXT = (6, 4, 5, 7, 6, 12, 11, 21, 21, 64, 64)


def _array_code(size: int, signed: bool) -> str:
    """The array typecode of an integer of ``size`` bytes on this platform."""
    for code in "bhilq" if signed else "BHILQ":
        if array(code).itemsize == size:
            return code
    raise RuntimeError(f"no {size}-byte array typecode")


_ARRAY_CODE = tuple(
    "d" if kind == _K_F64 else _array_code(_KIND_SIZE[kind], _KIND_SIGNED[kind])
    for kind in range(_K_F64 + 1)
)  # float32 is read as its uint32 bits

_SCALAR = 0
_ARRAY = 1
_SEQ = 2

_NUMERIC_KINDS = {
    "uint8": _K_U8,
    "int8": _K_I8,
    "int16": _K_I16,
    "uint16": _K_U16,
    "int32": _K_I32,
    "uint32": _K_U32,
    "int64": _K_I64,
    "uint64": _K_U64,
}
# rosidl_parser BasicType names (what introspection reports).
_IDL_KINDS = {
    **_NUMERIC_KINDS,
    "boolean": _K_BOOL,
    "octet": _K_U8,
    "char": _K_CHAR,
    "wchar": _K_WCHAR,
    "float": _K_F32,
    "double": _K_F64,
}
# .msg primitive names: there ``char`` is uint8.
_MSG_KINDS = {
    **_NUMERIC_KINDS,
    "bool": _K_BOOL,
    "byte": _K_U8,
    "char": _K_U8,
    "float32": _K_F32,
    "float64": _K_F64,
}

_NATIVE_LITTLE = sys.byteorder == "little"
_MASK64 = 0xFFFFFFFFFFFFFFFF
_MASK32 = 0xFFFFFFFF
_SIGN_BIT = (0, 0x80, 0x80, 0x8000, 0x8000, 0x80000000, 0x80000000, 1 << 63, 1 << 63)
_SIZE_MASK = (0, 0xFF, 0xFF, 0xFFFF, 0xFFFF, _MASK32, _MASK32, _MASK64, _MASK64)

_POW10 = [10**i for i in range(20)]
_DIGITS2 = b"".join(b"%02d" % i for i in range(100))
# "0,"..."255," each in a 4-byte slot and their lengths: uint8 arrays copy a whole slot,
# then advance by the length.
_U8_SLOTS = b"".join((b"%d," % i).ljust(4, b"\0") for i in range(256))
_U8_LENS = bytes(len(b"%d," % i) for i in range(256))
_U8_TXT = [b"%d" % i for i in range(256)]

_STRUCT_LE = [struct.Struct("<" + c) for c in ("B", "B", "b", "h", "H", "i", "I", "q", "Q")]
_STRUCT_BE = [struct.Struct(">" + c) for c in ("B", "B", "b", "h", "H", "i", "I", "q", "Q")]
_F64_LE = struct.Struct("<d")
_F64_BE = struct.Struct(">d")
_U32_LE = struct.Struct("<I")
_U32_BE = struct.Struct(">I")


# ---------------------------------------------------------------------------------------
# Shortest round-trip float formatting (Ryu, Ulf Adams 2018), in integer arithmetic that
# means the same with Python ints and with the C uint64 types of the .pxd.

# Literals past 32 bits would be Python ints in the compiled twin: typed names instead.
_F64_MANTISSA = (1 << 52) - 1
_F64_HIDDEN_BIT = 1 << 52
_F64_EXPONENT = 0x7FF << 52
_F64_ABS = (1 << 63) - 1
_F32_POW5_INV_BITS = 59
_F32_POW5_BITS = 61
_F64_POW5_INV_BITS = 125
_F64_POW5_BITS = 125


def _pow5_inv_table(count: int, bits: int) -> list[int]:
    """floor(2**(bitlen(5**i) - 1 + bits) / 5**i) + 1 for i < count."""
    return [((1 << ((5**i).bit_length() - 1 + bits)) // 5**i) + 1 for i in range(count)]


def _pow5_table(count: int, bits: int) -> list[int]:
    """5**i scaled to exactly ``bits`` significant bits, for i < count."""
    out = []
    for i in range(count):
        shift = (5**i).bit_length() - bits
        out.append(5**i >> shift if shift >= 0 else 5**i << -shift)
    return out


_F32_POW5_INV = _pow5_inv_table(31, _F32_POW5_INV_BITS)
_F32_POW5 = _pow5_table(47, _F32_POW5_BITS)
_F64_POW5_INV_LO = [v & _MASK64 for v in _pow5_inv_table(342, _F64_POW5_INV_BITS)]
_F64_POW5_INV_HI = [v >> 64 for v in _pow5_inv_table(342, _F64_POW5_INV_BITS)]
_F64_POW5_LO = [v & _MASK64 for v in _pow5_table(326, _F64_POW5_BITS)]
_F64_POW5_HI = [v >> 64 for v in _pow5_table(326, _F64_POW5_BITS)]


def _pow5bits(e):
    """ceil(log2(5**e)) for 0 <= e <= 3528 (1 for e == 0)."""
    return ((e * 1217359) >> 19) + 1


def _log10_pow2(e):
    """floor(log10(2**e)) for 0 <= e <= 1650."""
    return (e * 78913) >> 18


def _log10_pow5(e):
    """floor(log10(5**e)) for 0 <= e <= 2620."""
    return (e * 732923) >> 20


def _pow5_factor(v):
    """Number of times 5 divides v (v > 0)."""
    count = 0
    while v % 5 == 0:
        v //= 5
        count += 1
    return count


def _mulshift32(m, factor, shift):
    """(m * factor) >> shift for a 32-bit m, a 64-bit factor and 32 < shift < 96."""
    low = factor & _MASK32
    high = factor >> 32
    total = ((m * low) >> 32) + m * high
    return (total >> (shift - 32)) & _MASK32


def _mulhi64(a, b):
    """High 64 bits of the 128-bit product of two 64-bit values."""
    if cython.compiled:
        return _c_mulhi64(a, b)  # noqa: F821
    else:
        return (a * b) >> 64


def _mulshift64(m, lo, hi, shift):
    """(m * (hi << 64 | lo)) >> shift for m < 2**55 and 64 < shift < 128."""
    high1 = _mulhi64(m, hi)
    low1 = (m * hi) & _MASK64
    high0 = _mulhi64(m, lo)
    total = (high0 + low1) & _MASK64
    if total < high0:
        high1 += 1
    shift -= 64
    return ((high1 << (64 - shift)) | (total >> shift)) & _MASK64


class _Decimal:
    """A decimal ``sig * 10**exp10``, the out-parameter of the shortest-digit searches."""

    def __init__(self):
        self.sig = 0
        self.exp10 = 0


def _f32_shortest(bits, out):
    """Sets ``out`` to the shortest decimal of the finite non-zero float32 ``bits``."""
    ieee_mantissa = bits & 0x7FFFFF
    ieee_exponent = (bits >> 23) & 0xFF
    if ieee_exponent == 0:
        e2 = 1 - 127 - 23 - 2
        m2 = ieee_mantissa
    else:
        e2 = ieee_exponent - 127 - 23 - 2
        m2 = 0x800000 | ieee_mantissa
    accept_bounds = (m2 & 1) == 0
    mv = 4 * m2
    mp = 4 * m2 + 2
    mm_shift = 1 if (ieee_mantissa != 0 or ieee_exponent <= 1) else 0
    mm = 4 * m2 - 1 - mm_shift
    vm_trailing_zeros = False
    vr_trailing_zeros = False
    last_removed = 0
    if e2 >= 0:
        q = _log10_pow2(e2)
        e10 = q
        k = _F32_POW5_INV_BITS + _pow5bits(q) - 1
        i = q + k - e2
        factor = _F32_POW5_INV[q]
        vr = _mulshift32(mv, factor, i)
        vp = _mulshift32(mp, factor, i)
        vm = _mulshift32(mm, factor, i)
        if q != 0 and (vp - 1) // 10 <= vm // 10:
            k = _F32_POW5_INV_BITS + _pow5bits(q - 1) - 1
            last_removed = _mulshift32(mv, _F32_POW5_INV[q - 1], q - 1 + k - e2) % 10
        if q <= 9:
            if mv % 5 == 0:
                vr_trailing_zeros = _pow5_factor(mv) >= q
            elif accept_bounds:
                vm_trailing_zeros = _pow5_factor(mm) >= q
            elif _pow5_factor(mp) >= q:
                vp -= 1
    else:
        q = _log10_pow5(-e2)
        e10 = q + e2
        i = -e2 - q
        k = _pow5bits(i) - _F32_POW5_BITS
        j = q - k
        factor = _F32_POW5[i]
        vr = _mulshift32(mv, factor, j)
        vp = _mulshift32(mp, factor, j)
        vm = _mulshift32(mm, factor, j)
        if q != 0 and (vp - 1) // 10 <= vm // 10:
            j = q - 1 - (_pow5bits(i + 1) - _F32_POW5_BITS)
            last_removed = _mulshift32(mv, _F32_POW5[i + 1], j) % 10
        if q <= 1:
            vr_trailing_zeros = True
            if accept_bounds:
                vm_trailing_zeros = mm_shift == 1
            else:
                vp -= 1
        elif q < 31:
            vr_trailing_zeros = ((mv >> (q - 1)) << (q - 1)) == mv
    removed = 0
    if vm_trailing_zeros or vr_trailing_zeros:
        while vp // 10 > vm // 10:
            vm_trailing_zeros = vm_trailing_zeros and vm % 10 == 0
            vr_trailing_zeros = vr_trailing_zeros and last_removed == 0
            last_removed = vr % 10
            vr //= 10
            vp //= 10
            vm //= 10
            removed += 1
        if vm_trailing_zeros:
            while vm % 10 == 0:
                vr_trailing_zeros = vr_trailing_zeros and last_removed == 0
                last_removed = vr % 10
                vr //= 10
                vp //= 10
                vm //= 10
                removed += 1
        if vr_trailing_zeros and last_removed == 5 and vr % 2 == 0:
            last_removed = 4  # round half to even
        if (vr == vm and (not accept_bounds or not vm_trailing_zeros)) or last_removed >= 5:
            vr += 1
    else:
        while vp // 10 > vm // 10:
            last_removed = vr % 10
            vr //= 10
            vp //= 10
            vm //= 10
            removed += 1
        if vr == vm or last_removed >= 5:
            vr += 1
    out.sig = vr
    out.exp10 = e10 + removed


def _f64_shortest(bits, out):
    """Sets ``out`` to the shortest decimal of the finite non-zero float64 ``bits``."""
    ieee_mantissa = bits & _F64_MANTISSA
    ieee_exponent = (bits >> 52) & 0x7FF
    if ieee_exponent == 0:
        e2 = 1 - 1023 - 52 - 2
        m2 = ieee_mantissa
    else:
        e2 = ieee_exponent - 1023 - 52 - 2
        m2 = _F64_HIDDEN_BIT | ieee_mantissa
    if -54 <= e2 <= -2 and ((m2 >> (-e2 - 2)) << (-e2 - 2)) == m2:
        # An integer below 2**53: its digits, trailing zeros removed, are the shortest.
        vr = m2 >> (-e2 - 2)
        removed = 0
        while vr % 10 == 0:
            vr //= 10
            removed += 1
        out.sig = vr
        out.exp10 = removed
        return 0
    accept_bounds = (m2 & 1) == 0
    mv = 4 * m2
    mm_shift = 1 if (ieee_mantissa != 0 or ieee_exponent <= 1) else 0
    vm_trailing_zeros = False
    vr_trailing_zeros = False
    if e2 >= 0:
        q = _log10_pow2(e2)
        if e2 > 3:
            q -= 1
        e10 = q
        k = _F64_POW5_INV_BITS + _pow5bits(q) - 1
        i = q + k - e2
        lo = _F64_POW5_INV_LO[q]
        hi = _F64_POW5_INV_HI[q]
        vr = _mulshift64(mv, lo, hi, i)
        vp = _mulshift64(mv + 2, lo, hi, i)
        vm = _mulshift64(mv - 1 - mm_shift, lo, hi, i)
        if q <= 21:
            if mv % 5 == 0:
                vr_trailing_zeros = _pow5_factor(mv) >= q
            elif accept_bounds:
                vm_trailing_zeros = _pow5_factor(mv - 1 - mm_shift) >= q
            elif _pow5_factor(mv + 2) >= q:
                vp -= 1
    else:
        q = _log10_pow5(-e2)
        if -e2 > 1:
            q -= 1
        e10 = q + e2
        i = -e2 - q
        k = _pow5bits(i) - _F64_POW5_BITS
        j = q - k
        lo = _F64_POW5_LO[i]
        hi = _F64_POW5_HI[i]
        vr = _mulshift64(mv, lo, hi, j)
        vp = _mulshift64(mv + 2, lo, hi, j)
        vm = _mulshift64(mv - 1 - mm_shift, lo, hi, j)
        if q <= 1:
            vr_trailing_zeros = True
            if accept_bounds:
                vm_trailing_zeros = mm_shift == 1
            else:
                vp -= 1
        elif q < 63:
            vr_trailing_zeros = ((mv >> q) << q) == mv  # the q low bits are zero
    removed = 0
    last_removed = 0
    if vm_trailing_zeros or vr_trailing_zeros:
        while vp // 10 > vm // 10:
            vm_trailing_zeros = vm_trailing_zeros and vm % 10 == 0
            vr_trailing_zeros = vr_trailing_zeros and last_removed == 0
            last_removed = vr % 10
            vr //= 10
            vp //= 10
            vm //= 10
            removed += 1
        if vm_trailing_zeros:
            while vm % 10 == 0:
                vr_trailing_zeros = vr_trailing_zeros and last_removed == 0
                last_removed = vr % 10
                vr //= 10
                vp //= 10
                vm //= 10
                removed += 1
        if vr_trailing_zeros and last_removed == 5 and vr % 2 == 0:
            last_removed = 4  # round half to even
        if (vr == vm and (not accept_bounds or not vm_trailing_zeros)) or last_removed >= 5:
            vr += 1
    else:
        round_up = False
        if vp // 100 > vm // 100:
            round_up = vr % 100 >= 50
            vr //= 100
            vp //= 100
            vm //= 100
            removed += 2
        while vp // 10 > vm // 10:
            round_up = vr % 10 >= 5
            vr //= 10
            vp //= 10
            vm //= 10
            removed += 1
        if vr == vm or round_up:
            vr += 1
    out.sig = vr
    out.exp10 = e10 + removed


def _decimal_text(negative, digits, exp10):
    """Text of ``digits * 10**exp10`` laid out as Python's float repr does."""
    text = b"%d" % digits
    length = len(text)
    point = length + exp10
    sign = b"-" if negative else b""
    if point <= -4 or point > 16:
        mantissa = text[:1] + b"." + text[1:] if length > 1 else text
        return sign + mantissa + b"e%+03d" % (point - 1)
    if point <= 0:
        return sign + b"0." + b"0" * -point + text
    if point >= length:
        return sign + text + b"0" * (point - length) + b".0"
    return sign + text[:point] + b"." + text[point:]


def _f32_text(bits):
    """JSON text of the float32 with these bits (null when not finite)."""
    if (bits & 0x7F800000) == 0x7F800000:
        return b"null"
    if (bits & 0x7FFFFFFF) == 0:
        return b"-0.0" if bits >> 31 else b"0.0"
    out = _Decimal()
    _f32_shortest(bits, out)
    return _decimal_text(bits >> 31, out.sig, out.exp10)


def _f64_text(value):
    """JSON text of a float64 (null when not finite)."""
    if value != value or value == _INF or value == -_INF:
        return b"null"
    return repr(value).encode()


_INF = float("inf")


def float32_repr(value: float) -> str:
    """Shortest text that reads back as the same float32 ("null" when not finite)."""
    (bits,) = _U32_LE.unpack(struct.pack("<f", value))
    if cython.compiled:
        cur = _Cursor.__new__(_Cursor)
        cur.start(b"", 64, True)
        cur.w_f32(bits)
        return cur.result().decode()
    else:
        return _f32_text(bits).decode()


def float64_repr(value: float) -> str:
    """Shortest text that reads back as the same float64 ("null" when not finite)."""
    if cython.compiled:
        (bits,) = struct.unpack("<Q", struct.pack("<d", value))
        cur = _Cursor.__new__(_Cursor)
        cur.start(b"", 64, True)
        cur.w_f64(bits)
        return cur.result().decode()
    else:
        return _f64_text(value).decode()


# ---------------------------------------------------------------------------------------
# Compiled twin: decimal digits straight into the output buffer.


def _div_pow10_magic(k: int) -> tuple[int, int]:
    """(m, s) with v // 10**k == (v * m >> 64) >> s for every v < 2**57."""
    d = 10**k
    shift = d.bit_length() - 1  # 2**shift <= d keeps m below 2**64; the error stays < 1/d
    return -(-(1 << (64 + shift)) // d), shift


_DIV_POW10_MAGIC = [_div_pow10_magic(k)[0] if k else 0 for k in range(17)]
_DIV_POW10_SHIFT = [_div_pow10_magic(k)[1] if k else 0 for k in range(17)]


def _decimal_length(v):
    """Number of decimal digits of an unsigned 64-bit value (1 for 0)."""
    if cython.compiled:
        v |= 1  # the same length, and 0 has one digit
        t = (_c_bitlen64(v) * 1233) >> 12  # noqa: F821 - floor(log10) or one more
        return t + 1 - (v < _POW10[t])
    if v < 100000000:
        if v < 10000:
            if v < 100:
                return 1 if v < 10 else 2
            return 3 if v < 1000 else 4
        if v < 1000000:
            return 5 if v < 100000 else 6
        return 7 if v < 10000000 else 8
    if v < _POW10[16]:
        if v < _POW10[12]:
            if v < _POW10[10]:
                return 9 if v < _POW10[9] else 10
            return 11 if v < _POW10[11] else 12
        if v < _POW10[14]:
            return 13 if v < _POW10[13] else 14
        return 15 if v < _POW10[15] else 16
    if v < _POW10[18]:
        return 17 if v < _POW10[17] else 18
    return 19 if v < _POW10[19] else 20


def _load(q, size, little):
    """Unsigned value of the ``size`` bytes at ``q``, in the given byte order."""
    v = 0
    if little:
        if size == 8:
            for i in range(7, -1, -1):
                v = (v << 8) | q[i]
        elif size == 4:
            for i in range(3, -1, -1):
                v = (v << 8) | q[i]
        elif size == 2:
            v = (q[1] << 8) | q[0]
        else:
            v = q[0]
    elif size == 8:
        for i in range(8):
            v = (v << 8) | q[i]
    elif size == 4:
        for i in range(4):
            v = (v << 8) | q[i]
    elif size == 2:
        v = (q[0] << 8) | q[1]
    else:
        v = q[0]
    return v


# Eight digits at once (little-endian hosts): two 4-digit lanes split into 2-digit then
# 1-digit lanes by multiply-shift divisions, one ASCII byte per digit, one 8-byte store.
_SWAR_LANES_7F = 0x7F0000007F
_SWAR_LANES_0F = 0x000F000F000F000F
_SWAR_ASCII = 0x3030303030303030


def _ascii8(x):
    """Compiled twin: the 8 digits of ``x`` < 10**8 as ASCII, the first in the low byte."""
    merged = x % 10000  # widened to 64 bits before the shift
    merged = (merged << 32) | (x // 10000)
    top = ((merged * 10486) >> 20) & _SWAR_LANES_7F  # lane // 100
    hundreds = ((merged - 100 * top) << 16) + top
    tens = ((hundreds * 103) >> 10) & _SWAR_LANES_0F  # lane // 10
    tens += (hundreds - 10 * tens) << 8
    return tens + _SWAR_ASCII


# ---------------------------------------------------------------------------------------
# Cursor: reads the CDR input and writes the JSON output.


class _Cursor(_Decimal):
    """Input position over CDR bytes and the JSON output being built.

    Made with ``_Cursor.__new__(_Cursor)`` then ``start()``: no argument parsing per message.
    """

    def start(self, data, size_hint, little):
        self.data = data
        self.p = data
        self.pos = 4  # CDR alignment counts from the end of the encapsulation header
        self.end = len(data)
        self.little = little
        self.n = 0
        self.cap = 0
        if cython.compiled:
            self.cap = size_hint if size_hint > 64 else 64
            self.buf = cython.cast(cython.p_char, malloc(self.cap))  # noqa: F821
            if self.buf == cython.NULL:
                raise MemoryError()
        else:
            self.out = []
        return 0

    def __dealloc__(self):
        if cython.compiled:
            free(self.buf)  # noqa: F821

    def fail(self, what):
        raise CdrError(f"{what} at offset {self.pos - 4} of {self.end - 4} payload bytes")

    def need(self, size):
        if size > self.end - self.pos:
            self.fail(f"truncated: {size} bytes needed")
        return 0

    def align(self, size):
        self.pos += (4 - self.pos) & (size - 1)

    def result(self):
        if cython.compiled:
            return PyBytes_FromStringAndSize(self.buf, self.n)  # noqa: F821
        else:
            return b"".join(self.out)

    # -- output ---------------------------------------------------------------------

    def reserve(self, extra):
        if cython.compiled:
            if self.n + extra > self.cap:
                cap = self.cap * 2
                if cap < self.n + extra:
                    cap = self.n + extra
                grown = realloc(self.buf, cap)  # noqa: F821
                if grown == cython.NULL:
                    raise MemoryError()
                self.buf = cython.cast(cython.p_char, grown)
                self.cap = cap
        return 0

    def put(self, text):
        if cython.compiled:
            size = len(text)
            self.reserve(size)
            src = text
            memcpy(self.buf + self.n, src, size)  # noqa: F821
            self.n += size
        else:
            self.out.append(text)
        return 0

    def put_padded(self, text, size):
        """Appends the first ``size`` bytes of ``text``, which ends with 32 bytes of padding."""
        if cython.compiled:
            src = text
            if size <= 32:
                self.reserve(32)
                memcpy(self.buf + self.n, src, 32)  # noqa: F821 - fixed size: inlined
            else:
                self.reserve(size)
                memcpy(self.buf + self.n, src, size)  # noqa: F821
            self.n += size
        else:
            self.out.append(text[:size])
        return 0

    def put_c(self, c):
        if cython.compiled:
            self.reserve(1)
            self.buf[self.n] = c
            self.n += 1
        else:
            self.out.append(_BYTE_TXT[c])
        return 0

    # -- compiled-only writers: the caller has reserved the room ------------------------

    def w_8digits(self, o, x):
        """Writes exactly 8 digits of ``x`` < 10**8 at ``o``."""
        if _NATIVE_LITTLE:
            tens = _ascii8(x)
            memcpy(o, cython.address(tens), 8)  # noqa: F821
        else:
            digits = _DIGITS2
            high = x // 10000
            low = x - high * 10000
            memcpy(o, digits + (high // 100) * 2, 2)  # noqa: F821
            memcpy(o + 2, digits + (high % 100) * 2, 2)  # noqa: F821
            memcpy(o + 4, digits + (low // 100) * 2, 2)  # noqa: F821
            memcpy(o + 6, digits + (low % 100) * 2, 2)  # noqa: F821
        return 0

    def w_digits(self, o, v, count):
        """Writes exactly ``count`` digits of ``v`` (zero-padded on the left) at ``o``."""
        digits = _DIGITS2
        while count > 8:
            count -= 8
            self.w_8digits(o + count, v % 100000000)
            v //= 100000000
        small = v
        while count >= 2:
            count -= 2
            memcpy(o + count, digits + (small % 100) * 2, 2)  # noqa: F821
            small //= 100
        if count:
            o[0] = 48 + small
        return 0

    def w_digits_fast(self, o, v, length):
        """Writes the ``length`` digits of ``v`` < 10**17 at ``o``; junk may follow up to o + 8."""
        if not _NATIVE_LITTLE or length <= 2:
            return self.w_digits(o, v, length)  # one or two digits: one table copy
        if length <= 8:
            word = _ascii8(v) >> ((8 - length) * 8)  # leading zeros shifted out
            memcpy(o, cython.address(word), 8)  # noqa: F821
            return 0
        high = v // 100000000
        low = _ascii8(v - high * 100000000)
        top = high // 100000000  # the 17th digit, else 0 and overwritten: no branch
        high -= top * 100000000
        o[0] = 48 + top
        skip = length == 17
        o += skip
        length -= skip
        word = _ascii8(high) >> ((16 - length) * 8)
        memcpy(o, cython.address(word), 8)  # noqa: F821
        memcpy(o + length - 8, cython.address(low), 8)  # noqa: F821
        return 0

    def w_fraction(self, o, digits, length, point):
        """Writes ``length`` <= 17 digits with a '.' after the first ``point`` (0 < point <
        length) at ``o``, junk up to 8 bytes after; returns the end. Little-endian hosts.

        8-digit words stored whole, the one holding the point stored again shifted past it:
        no division per digit and no reads of bytes just written.
        """
        if length <= 8:
            word = _ascii8(digits) >> ((8 - length) * 8)
            memcpy(o, cython.address(word), 8)  # noqa: F821
            word >>= point * 8
            memcpy(o + point + 1, cython.address(word), 8)  # noqa: F821
            o[point] = 46  # '.'
            return o + length + 1
        high = digits // 100000000
        low = _ascii8(digits - high * 100000000)
        if length == 17:
            top = high // 100000000
            o[0] = 48 + top
            high -= top * 100000000
            if point == 1:
                o[1] = 46
                word = _ascii8(high)
                memcpy(o + 2, cython.address(word), 8)  # noqa: F821
                memcpy(o + 10, cython.address(low), 8)  # noqa: F821
                return o + 18
            o += 1
            point -= 1
            length -= 1
        head = length - 8  # digits in the high word
        word = _ascii8(high) >> ((8 - head) * 8)
        memcpy(o, cython.address(word), 8)  # noqa: F821
        if point < head:
            word >>= point * 8
            memcpy(o + point + 1, cython.address(word), 8)  # noqa: F821
            memcpy(o + head + 1, cython.address(low), 8)  # noqa: F821
        else:
            memcpy(o + head, cython.address(low), 8)  # noqa: F821
            low >>= (point - head) * 8
            memcpy(o + point + 1, cython.address(low), 8)  # noqa: F821
        o[point] = 46  # '.'
        return o + length + 1

    def w_uint(self, v):
        """Writes the decimal digits of an unsigned 64-bit value."""
        length = _decimal_length(v)
        self.w_digits(self.buf + self.n, v, length)
        self.n += length
        return 0

    def w_decimal(self, negative, digits, exp10):
        """Writes ``digits * 10**exp10`` laid out as Python's float repr does.

        Needs 64 reserved bytes: fixed-size copies of digits and zeros may run past the text.
        """
        o = self.buf + self.n
        if negative:
            o[0] = 45  # '-'
            o += 1
        length = _decimal_length(digits)
        point = length + exp10
        if _NATIVE_LITTLE and 0 < point < length:
            o = self.w_fraction(o, digits, length, point)
        elif point <= -4 or point > 16:
            self.w_digits_fast(o + 1, digits, length)
            o[0] = o[1]
            if length > 1:
                o[1] = 46  # '.'
                o += length + 1
            else:
                o += 1
            o[0] = 101  # 'e'
            x = point - 1
            if x < 0:
                o[1] = 45
                x = -x
            else:
                o[1] = 43  # '+'
            if x >= 100:
                o[2] = 48 + x // 100
                x %= 100
                o += 1
            o[2] = 48 + x // 10
            o[3] = 48 + x % 10
            o += 4
        elif point <= 0:
            memcpy(o, b"0.000", 5)  # noqa: F821
            self.w_digits_fast(o + 2 - point, digits, length)
            o += 2 - point + length
        elif point >= length:
            self.w_digits_fast(o, digits, length)
            memcpy(o + length, b"0000000000000000", 16)  # noqa: F821
            o[point] = 46
            o[point + 1] = 48
            o += point + 2
        elif point <= 4:
            # Digits one place to the right, then the integer digits back over the gap:
            # byte reads of bytes just stored (store forwarding), no division.
            self.w_digits(o + 1, digits, length)
            o[0] = o[1]
            if point > 1:
                o[1] = o[2]
                if point > 2:
                    o[2] = o[3]
                    if point > 3:
                        o[3] = o[4]
            o[point] = 46  # '.'
            o += length + 1
        else:
            fraction_length = length - point
            whole = _mulhi64(digits, _DIV_POW10_MAGIC[fraction_length])
            whole >>= _DIV_POW10_SHIFT[fraction_length]
            fraction = digits - whole * _POW10[fraction_length]
            chunks = (fraction_length + 7) >> 3
            if length + 1 >= chunks * 8:
                # Whole 8-digit chunks from the right end; the leading zeros of the first
                # one land on the point and the integer part, written after them.
                end = o + length + 1
                while chunks:
                    end -= 8
                    self.w_8digits(end, fraction % 100000000)
                    fraction //= 100000000
                    chunks -= 1
            else:
                self.w_digits(o + point + 1, fraction, fraction_length)
            o[point] = 46  # '.'
            self.w_digits(o, whole, point)
            o += length + 1
        self.n = o - self.buf
        return 0

    def w_f32(self, bits):
        if (bits & 0x7F800000) == 0x7F800000:
            memcpy(self.buf + self.n, b"null", 4)  # noqa: F821
            self.n += 4
        elif (bits & 0x7FFFFFFF) == 0:
            if bits >> 31:
                self.buf[self.n] = 45
                self.n += 1
            memcpy(self.buf + self.n, b"0.0", 3)  # noqa: F821
            self.n += 3
        else:
            _f32_shortest(bits, self)
            self.w_decimal(bits >> 31, self.sig, self.exp10)
        return 0

    def w_f64(self, bits):
        if (bits & _F64_EXPONENT) == _F64_EXPONENT:
            memcpy(self.buf + self.n, b"null", 4)  # noqa: F821
            self.n += 4
        elif (bits & _F64_ABS) == 0:
            if bits >> 63:
                self.buf[self.n] = 45
                self.n += 1
            memcpy(self.buf + self.n, b"0.0", 3)  # noqa: F821
            self.n += 3
        else:
            _f64_shortest(bits, self)
            self.w_decimal(bits >> 63, self.sig, self.exp10)
        return 0

    def w_prim(self, kind, bits):
        """Writes one primitive given its raw bits (compiled twin)."""
        if kind == _K_F64:
            self.w_f64(bits)
        elif kind == _K_F32:
            self.w_f32(bits)
        elif kind == _K_BOOL:
            if bits:
                memcpy(self.buf + self.n, b"true", 4)  # noqa: F821
                self.n += 4
            else:
                memcpy(self.buf + self.n, b"false", 5)  # noqa: F821
                self.n += 5
        elif _KIND_SIGNED[kind] and bits & _SIGN_BIT[kind]:
            self.buf[self.n] = 45
            self.n += 1
            self.w_uint((~bits + 1) & _SIZE_MASK[kind])
        else:
            self.w_uint(bits)
        return 0

    # -- input ----------------------------------------------------------------------

    def read_u32(self):
        self.align(4)
        self.need(4)
        if cython.compiled:
            v = _load(self.p + self.pos, 4, self.little)
        else:
            v = (_U32_LE if self.little else _U32_BE).unpack_from(self.data, self.pos)[0]
        self.pos += 4
        return v

    # -- values ---------------------------------------------------------------------

    def put_prim(self, kind):
        """Converts one primitive value."""
        size = _KIND_SIZE[kind]
        self.align(size)
        self.need(size)
        if cython.compiled:
            self.reserve(64)
            self.w_prim(kind, _load(self.p + self.pos, size, self.little))
        elif kind == _K_F64:
            (value,) = (_F64_LE if self.little else _F64_BE).unpack_from(self.data, self.pos)
            self.out.append(_f64_text(value))
        elif kind == _K_F32:
            (bits,) = (_U32_LE if self.little else _U32_BE).unpack_from(self.data, self.pos)
            self.out.append(_f32_text(bits))
        elif kind == _K_BOOL:
            self.out.append(b"true" if self.data[self.pos] else b"false")
        else:
            (value,) = (_STRUCT_LE if self.little else _STRUCT_BE)[kind].unpack_from(
                self.data, self.pos
            )
            self.out.append(b"%d" % value)
        self.pos += size
        return 0

    def put_prims(self, kind, count):
        """Converts ``count`` contiguous primitives as the inside of a JSON array."""
        if count == 0:
            return 0  # Fast CDR does not align an empty run
        size = _KIND_SIZE[kind]
        self.align(size)
        self.need(count * size)
        if cython.compiled:
            q = self.p + self.pos
            if kind == _K_U8:
                self.reserve(count * 4)
                o = self.buf + self.n
                slots = _U8_SLOTS
                lens = _U8_LENS
                for i in range(count):
                    b = q[i]
                    memcpy(o, slots + b * 4, 4)  # noqa: F821
                    o += lens[b]
                self.n = (o - self.buf) - 1  # drop the last comma
            else:
                room = _KIND_MAXTXT[kind]  # per element: the buffer grows with the text
                little = self.little
                if kind == _K_F64:
                    for i in range(count):
                        self.reserve(room)
                        self.w_f64(_load(q + i * 8, 8, little))
                        self.buf[self.n] = 44  # ','
                        self.n += 1
                elif kind == _K_F32:
                    for i in range(count):
                        self.reserve(room)
                        self.w_f32(_load(q + i * 4, 4, little))
                        self.buf[self.n] = 44
                        self.n += 1
                else:
                    for i in range(count):
                        self.reserve(room)
                        self.w_prim(kind, _load(q + i * size, size, little))
                        self.buf[self.n] = 44
                        self.n += 1
                self.n -= 1  # the last comma
        else:
            raw = self.data[self.pos : self.pos + count * size]
            self.out.append(_prims_text(kind, raw, self.little))
        self.pos += count * size
        return 0

    def put_str(self):
        """Converts one string: UTF-8 with replacement, one trailing NUL dropped."""
        size = self.read_u32()
        self.need(size)
        start = self.pos
        self.pos += size
        if size and self.p[start + size - 1] == 0:
            size -= 1
        if cython.compiled:
            # Printable ASCII without '"' or '\\' is copied as is; anything else goes the
            # general way below (decode with replacement, escape like orjson).
            self.reserve(size + 2)
            q = self.p + start
            o = self.buf + self.n
            plain = _PLAIN_ASCII
            o[0] = 34  # '"'
            for i in range(size):
                c = q[i]
                if not plain[c]:
                    break
                o[i + 1] = c
            else:
                o[size + 1] = 34
                self.n += size + 2
                return 0
        raw = self.data[start : start + size]
        self.put(orjson.dumps(raw.decode("utf-8", "replace")))
        return 0

    def put_wstr(self):
        """Converts one wstring: UTF-16 code units carried in 4 bytes each."""
        count = self.read_u32()
        self.need(count * 4)
        units = array(_ARRAY_CODE[_K_U32])
        units.frombytes(self.data[self.pos : self.pos + count * 4])
        self.pos += count * 4
        if self.little != _NATIVE_LITTLE:
            units.byteswap()
        if count and max(units) > 0xFFFF:
            units = array(_ARRAY_CODE[_K_U32], [u if u <= 0xFFFF else 0xFFFD for u in units])
        text = array("H", units).tobytes().decode(_UTF16_NATIVE, "replace")
        self.put(orjson.dumps(text))
        return 0


_UTF16_NATIVE = "utf-16-le" if _NATIVE_LITTLE else "utf-16-be"
_BYTE_TXT = [bytes([i]) for i in range(256)]
_CHAR_JSON = [orjson.dumps(chr(i)) for i in range(256)]
_PLAIN_ASCII = bytes(32 <= i < 127 and i not in (34, 92) for i in range(256))
_BOOL_TXT = [b"true"] * 256
_BOOL_TXT[0] = b"false"
_NONFINITE_TXT = {"nan", "inf", "-inf"}


def _prims_text(kind, raw, little):
    """Pure twin: JSON array body of packed primitives."""
    if kind == _K_U8:
        return b",".join(map(_U8_TXT.__getitem__, raw))
    if kind == _K_BOOL:
        return b",".join(map(_BOOL_TXT.__getitem__, raw))
    values = array(_ARRAY_CODE[kind])
    values.frombytes(raw)
    if little != _NATIVE_LITTLE:
        values.byteswap()
    if kind == _K_F32:
        return b",".join(map(_f32_text, values))
    if kind == _K_F64:
        texts = list(map(repr, values.tolist()))
        text = ",".join(texts)
        if "n" in text:  # nan, inf: never in the repr of a finite float
            text = ",".join(["null" if t in _NONFINITE_TXT else t for t in texts])
        return text.encode()
    return ",".join(map(str, values.tolist())).encode()


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
        if data[0] != 0 or data[1] > 1:
            raise CdrError(f"unsupported CDR encapsulation 0x{data[0]:02x}{data[1]:02x}")
        cur = _Cursor.__new__(_Cursor)
        cur.start(data, size * 2 + 64, data[1] == 1)
        _emit_struct(cur, self.plan)
        return cur.result()


# ---------------------------------------------------------------------------------------
# Plan building: from rclpy introspection or from .msg text.

_LOCK = threading.RLock()
_PLANS: dict[str, _Plan] = {}
_CONVERTERS: dict[str, Converter] = {}


_TYPE_NAME = re.compile(r"^([A-Za-z]\w*)/(?:(msg|srv|action)/)?([A-Za-z]\w*)$")


def _canonical(type_name):
    """'pkg/msg/Type' from 'pkg/msg/Type' or 'pkg/Type' ('srv' and 'action' parts too)."""
    match = _TYPE_NAME.match(type_name.strip()) if isinstance(type_name, str) else None
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
    fields = []
    for field_name, kind, shape, count, sub in specs:
        key = orjson.dumps(field_name) + b":"
        fields.append(_Field((b"," if fields else b"{") + key, kind, shape, count, sub))
    return _Plan(name, fields)


def _plan_from_class(name):
    from rosidl_parser import definition as idl

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


_MSG_FIELD = re.compile(r"^([A-Za-z][\w/]*)(<=\d+)?(\[(<=)?(\d*)\])?\s+([A-Za-z]\w*)\s*(.*)$")
_MSG_SECTION = re.compile(r"^=+\s*$\n^MSG: *(\S+) *$", re.MULTILINE)
_MSG_ALIASES = {"Header": "std_msgs/msg/Header", "time": "builtin_interfaces/msg/Time"}
_MSG_ALIASES["duration"] = "builtin_interfaces/msg/Duration"


def _plan_from_msg(name, sources, memo):
    """Plan of ``name`` from .msg texts in ``sources`` (canonical name -> text)."""
    if name in memo:
        return memo[name]
    specs = []
    package = name.split("/")[0]
    for raw_line in sources[name].splitlines():
        line = raw_line.strip()
        if not line or line.startswith("#"):
            continue
        match = _MSG_FIELD.match(line)
        if match is None:
            raise UnknownTypeError(f"{name}: cannot parse {raw_line!r}")
        base, _, array_part, bounded, size, field_name, rest = match.groups()
        if rest.startswith("="):
            continue  # a constant
        shape, count = _SCALAR, 0
        if array_part:
            shape = _SEQ if (bounded or not size) else _ARRAY
            count = int(size) if size else 0
        sub = None
        if base in _MSG_KINDS:
            kind = _MSG_KINDS[base]
        elif base == "string":
            kind = _K_STR
        elif base == "wstring":
            kind = _K_WSTR
        else:
            kind = _K_MSG
            ref = _MSG_ALIASES.get(base) or _canonical(base if "/" in base else f"{package}/{base}")
            sub = _plan_for(ref, sources, memo)
        specs.append((field_name, kind, shape, count, sub))
    memo[name] = plan = _make_plan(name, specs)
    return plan


def _plan_for(name, sources, memo):
    """Cached plan of a canonical type name, from ``sources`` texts or else introspection."""
    if sources is not None and name in sources:
        return _plan_from_msg(name, sources, memo)
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
    """Converter from .msg text: the root definition, then rosbag2-style 'MSG: pkg/Type' parts."""
    name = _canonical(type_name)
    parts = _MSG_SECTION.split(definition)
    sources = {name: parts[0]}
    for i in range(1, len(parts) - 1, 2):
        sources[_canonical(parts[i])] = parts[i + 1]
    with _LOCK:
        return Converter(name, _plan_from_msg(name, sources, {}))


def cdr_to_json(type_name: str, data: bytes) -> bytes:
    """JSON bytes of the CDR-encoded message ``data`` of an installed type."""
    return converter_for(type_name).to_json(data)
