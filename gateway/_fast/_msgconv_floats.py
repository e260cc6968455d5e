"""msgconv, part 2 of the twin: shortest round-trip float text and decimal digit writing."""

from __future__ import annotations

try:
    import cython
except ImportError:  # pure twin running without Cython installed
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

# twin: joined-begin (one compiled module in msgconv_c: setup.py drops this block)
from ._msgconv_tables import (
    _MASK32,
    _MASK64,
    _POW10,
)

# twin: joined-end

# ---------------------------------------------------------------------------------------
# Shortest round-trip float formatting (Ryu, Ulf Adams 2018, for float32 and subnormal float64;
# Schubfach for normal float64), in integer arithmetic that
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


def _floor_log2_pow10(e: int) -> int:
    """floor(log2(10**e)), exactly."""
    return (10**e).bit_length() - 1 if e >= 0 else -((10**-e).bit_length())


def _schubfach_g(k: int) -> int:
    """floor(10**-k * 2**(125 - floor(log2(10**-k)))) + 1: 10**-k scaled into [2**125, 2**126)."""
    e = -k
    shift = 125 - _floor_log2_pow10(e)
    if e >= 0:
        return (10**e << shift if shift >= 0 else 10**e >> -shift) + 1
    return (1 << shift) // 10**-e + 1


_SCH_LOG10_2 = 661971961083  # floor(q log10(2)) == q * this >> 41 for |q| <= 5456721
_SCH_LOG10_3Q = 274743187321  # the offset for floor(log10(3/4 2**q))
_SCH_LOG2_10 = 935039633142894  # floor(e log2(10)) == e * this >> 48 for |e| < 1300
_SCH_MASK63 = (1 << 63) - 1
_SCH_G1 = [_schubfach_g(k) >> 63 for k in range(-324, 293)]
_SCH_G0 = [_schubfach_g(k) & _SCH_MASK63 for k in range(-324, 293)]


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
    ieee_exponent = (bits >> 52) & 0x7FF
    if ieee_exponent == 0:
        return _f64_ryu(bits, out)  # subnormal
    c = _F64_HIDDEN_BIT | (bits & _F64_MANTISSA)
    q = ieee_exponent - 1075  # the value is c * 2**q
    if -53 < q <= 0 and ((c >> -q) << -q) == c:
        # An integer below 2**53: its digits, trailing zeros removed, are the shortest.
        sig = c >> -q
        exp10 = 0
    else:
        # Schubfach (Raffaello Giulietti 2020): one 126-bit scaled power of ten, three
        # products, then the shortest of at most four candidates.
        odd = c & 1
        cb = c << 2
        cbr = cb + 2
        if c != _F64_HIDDEN_BIT or ieee_exponent == 1:
            cbl = cb - 2
            k = (q * _SCH_LOG10_2) >> 41  # floor(q log10(2))
        else:
            cbl = cb - 1  # the lower neighbour is closer at a power of two
            k = (q * _SCH_LOG10_2 - _SCH_LOG10_3Q) >> 41  # floor(log10(3/4 2**q))
        h = q + ((-k * _SCH_LOG2_10) >> 48) + 2  # 1 <= h <= 4
        g1 = _SCH_G1[k + 324]
        g0 = _SCH_G0[k + 324]
        vb = _sch_rop(g1, g0, cb << h)
        vbl = _sch_rop(g1, g0, cbl << h) + odd
        vbr = _sch_rop(g1, g0, cbr << h) - odd
        s = vb >> 2
        sp10 = (s // 10) * 10
        upin = vbl <= sp10 << 2
        if upin != (((sp10 + 10) << 2) <= vbr):
            sig = sp10 if upin else sp10 + 10  # a shorter one lies in the interval
        else:
            upin = vbl <= s << 2
            if upin != (((s + 1) << 2) <= vbr):
                sig = s if upin else s + 1
            elif vb < (s << 2) + 2 or (vb == (s << 2) + 2 and (s & 1) == 0):
                sig = s  # both in the interval: the closer, ties to even
            else:
                sig = s + 1
        exp10 = k
    if sig % 10 == 0:
        sig //= 10
        exp10 += 1
        if sig % 10 == 0:  # more than one trailing zero: rare except for short values
            if sig % 100000000 == 0:
                sig //= 100000000
                exp10 += 8
            if sig % 10000 == 0:
                sig //= 10000
                exp10 += 4
            if sig % 100 == 0:
                sig //= 100
                exp10 += 2
            if sig % 10 == 0:
                sig //= 10
                exp10 += 1
    out.sig = sig
    out.exp10 = exp10
    return 0


def _sch_rop(g1, g0, cp):
    """Schubfach's rounded-odd product: floor(g cp / 2**127), its last bit set if inexact."""
    x1 = _mulhi64(g0, cp)
    y0 = (g1 * cp) & _MASK64
    y1 = _mulhi64(g1, cp)
    z = (y0 >> 1) + x1
    vbp = y1 + (z >> 63)
    return vbp | (((z & _SCH_MASK63) + _SCH_MASK63) >> 63)


def _f64_ryu(bits, out):
    """Sets ``out`` to the shortest decimal of the subnormal float64 ``bits`` (Ryu)."""
    ieee_mantissa = bits & _F64_MANTISSA
    ieee_exponent = (bits >> 52) & 0x7FF
    if ieee_exponent == 0:
        e2 = 1 - 1023 - 52 - 2
        m2 = ieee_mantissa
    else:
        e2 = ieee_exponent - 1023 - 52 - 2
        m2 = _F64_HIDDEN_BIT | ieee_mantissa
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
