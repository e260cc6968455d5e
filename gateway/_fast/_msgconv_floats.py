"""msgconv, part 2 of the twin: shortest round-trip float digits and float text."""

from __future__ import annotations

# mypy: disable-error-code="name-defined"
# (compiled twin: _c_mulhi64 is a C name the .pxd declares, which mypy does not read;
# ruff's F821 still checks names, its uses marked `noqa: F821`)

try:
    import cython
except ImportError:  # pure twin running without Cython installed
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

# twin: joined-begin (one compiled module in msgconv_c: setup.py drops this block)
from ._msgconv_tables import _MASK32, _MASK64

# twin: joined-end

# ---------------------------------------------------------------------------------------
# Shortest round-trip digits in integer arithmetic that means the same with Python ints and
# with the C uint64 types of the .pxd. Schubfach (Raffaello Giulietti 2020) for float32,
# float64 powers of two and subnormals: one 126-bit scaled power of ten, three products,
# then the shortest of at most four candidates. Other float64 values: Dragonbox (below).

# Literals past 32 bits would be Python ints in the compiled twin: typed names instead.
_F64_MANTISSA = (1 << 52) - 1
_F64_HIDDEN_BIT = 1 << 52
_F64_EXPONENT = 0x7FF << 52
_F64_ABS = (1 << 63) - 1
_F64_Q_MIN = -1074  # the exponent of subnormals and of the smallest normals
_F32_Q_MIN = -149


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


def _mulhi64(a, b):
    """High 64 bits of the 128-bit product of two 64-bit values."""
    if cython.compiled:
        return _c_mulhi64(a, b)  # noqa: F821
    else:
        return (a * b) >> 64


class _Decimal:
    """A decimal ``sig * 10**exp10``, the out-parameter of the shortest-digit search."""

    def __init__(self):
        self.sig = 0
        self.exp10 = 0


def _f64_shortest(bits, out):
    """Sets ``out`` to the shortest decimal of the finite non-zero float64 ``bits`` (sign ignored)."""
    ieee_exponent = (bits >> 52) & 0x7FF
    c = bits & _F64_MANTISSA
    if ieee_exponent and c:  # a normal, not a power of two: the common case
        return _dragonbox(c | _F64_HIDDEN_BIT, ieee_exponent - 1075, out)
    q = _F64_Q_MIN  # subnormal
    if ieee_exponent:
        c = _F64_HIDDEN_BIT  # a power of two: the lower neighbour is closer
        q = ieee_exponent - 1075
    return _shortest(c, q, 53, _F64_HIDDEN_BIT, _F64_Q_MIN, out)


# ---------------------------------------------------------------------------------------
# Float64 normals that are not powers of two: Dragonbox (Junekey Jeon 2020, as in {fmt}'s
# to_decimal), one 64x128-bit product for the common case, where Schubfach needs three.
# Its table: 10**k scaled into [2**127, 2**128), rounded up.

_DB_MIN_K = -292
_DB_MAX_K = 326


def _dragonbox_cache(k: int) -> int:
    """ceil(10**k * 2**(127 - floor(log2(10**k))))."""
    if k >= 0:
        shift = 127 - ((10**k).bit_length() - 1)
        return 10**k << shift if shift >= 0 else -((-(10**k)) >> -shift)
    return -(-(1 << (127 + (10**-k).bit_length())) // 10**-k)


_DB_HI = [_dragonbox_cache(k) >> 64 for k in range(_DB_MIN_K, _DB_MAX_K + 1)]
_DB_LO = [_dragonbox_cache(k) & _MASK64 for k in range(_DB_MIN_K, _DB_MAX_K + 1)]


def _db_parity(two_f, hi, lo, beta):
    """Dragonbox's compute_mul_parity: bit 1 the parity of the product's integer part, bit 0
    set when its fraction (to the precision of the cache) is zero."""
    high = ((two_f * hi) & _MASK64) + _mulhi64(two_f, lo)
    low = (two_f * lo) & _MASK64
    if not cython.compiled:
        high &= _MASK64
    parity = (high >> (64 - beta)) & 1
    integer = (((high << beta) & _MASK64) | (low >> (64 - beta))) == 0
    return (parity << 1) | integer


def _dragonbox(c, q, out):
    """Sets ``out`` to the shortest decimal of ``c * 2**q``: a float64 normal, c != 2**52."""
    even = (c & 1) == 0  # the interval's ends read back to c when it is even
    minus_k = ((q * 315653) >> 20) - 2  # floor(q log10(2)) - kappa
    hi = _DB_HI[-minus_k - _DB_MIN_K]
    lo = _DB_LO[-minus_k - _DB_MIN_K]
    beta = q + ((-minus_k * 1741647) >> 19)  # q + floor(log2(10**-minus_k)): 1 to 4
    deltai = hi >> (63 - beta)
    two_fc = c << 1
    u = (two_fc | 1) << beta
    # z = the upper 128 bits of the 192-bit product u * cache
    y = _mulhi64(u, lo)
    if cython.compiled:
        z_lo = u * hi + y
        zi = _mulhi64(u, hi) + (z_lo < y)
    else:
        z = u * hi + y
        z_lo = z & _MASK64
        zi = z >> 64
    sig = zi // 1000
    r = zi - sig * 1000
    small = True
    if r < deltai:
        small = False
        if r == 0 and z_lo == 0 and not even:
            sig -= 1  # the right end is excluded
            r = 1000
            small = True
    elif r == deltai:
        x = _db_parity(two_fc - 1, hi, lo, beta)
        small = (x >> 1) == 0 and not ((x & 1) and even)
    if not small:
        exp10 = minus_k + 3
        if sig % 10 == 0:
            sig //= 10
            exp10 += 1
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
    # The smaller divisor: one more digit, never a trailing zero. Dragonbox adds
    # (r - deltai / 2 + 50) // 100 to sig * 10: the same as dividing this by 100 (zi =
    # 1000 sig + r, and r == 0 where the right end was excluded), which does not wait
    # for the division by 1000.
    dist = zi - (deltai >> 1) + 50
    approx_y_parity = (dist ^ 50) & 1
    sig = dist // 100
    if dist % 100 == 0:
        y = _db_parity(two_fc, hi, lo, beta)
        if (y >> 1) != approx_y_parity:
            sig -= 1
        elif (y & 1) and (sig & 1):
            sig -= 1  # a tie: to even
    out.sig = sig
    out.exp10 = minus_k + 2
    return 0


def _f32_shortest(bits, out):
    """Sets ``out`` to the shortest decimal of the finite non-zero float32 ``bits`` (sign ignored).

    Schubfach at float32 width (as in Giulietti's FloatToDecimal): the top 63 bits of the
    scaled power of ten suffice, one 64-bit product per bound instead of two.
    """
    ieee_exponent = (bits >> 23) & 0xFF
    c = bits & 0x7FFFFF
    q = _F32_Q_MIN  # subnormal
    if ieee_exponent:
        c |= 0x800000
        q = ieee_exponent - 150
    if -24 < q <= 0 and ((c >> -q) << -q) == c:
        # An integer below 2**24: its digits, trailing zeros removed, are the shortest.
        sig = c >> -q
        exp10 = 0
    else:
        odd = c & 1
        cb = c << 2
        cbr = cb + 2
        if c != 0x800000 or q == _F32_Q_MIN:
            cbl = cb - 2
            k = (q * _SCH_LOG10_2) >> 41  # floor(q log10(2))
        else:
            cbl = cb - 1  # the lower neighbour is closer at a power of two
            k = (q * _SCH_LOG10_2 - _SCH_LOG10_3Q) >> 41  # floor(log10(3/4 2**q))
        h = q + ((-k * _SCH_LOG2_10) >> 48) + 33  # 32 <= h <= 35: cb << h < 2**61
        g = _SCH_G1[k + 324] + 1
        vb = _sch_rop32(g, cb << h)
        vbl = _sch_rop32(g, cbl << h) + odd
        vbr = _sch_rop32(g, cbr << h) - odd
        s = vb >> 2
        sig = 0
        exp10 = k
        if s >= 10:  # else s and s + 1 have one digit: as short as any
            s10 = s // 10
            sp10 = s10 * 10
            upin = vbl <= sp10 << 2
            if upin != (((sp10 + 10) << 2) <= vbr):
                # A shorter one lies in the interval: its digits without the zero, so the
                # zero needs no division to remove below.
                sig = s10 if upin else s10 + 1
                exp10 = k + 1
        if sig == 0:
            upin = vbl <= s << 2
            if upin != (((s + 1) << 2) <= vbr):
                sig = s if upin else s + 1
            elif vb < (s << 2) + 2 or (vb == (s << 2) + 2 and (s & 1) == 0):
                sig = s  # both in the interval: the closer, ties to even
            else:
                sig = s + 1
    # At most 9 digits: 32-bit divisions by constants.
    if sig % 10 == 0:
        sig //= 10
        exp10 += 1
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


def _shortest(c, q, precision, c_min, q_min, out):
    """Sets ``out`` to the shortest decimal that reads back as ``c * 2**q`` (c > 0), closest
    to it on a tie of lengths, trailing zeros removed: a float of ``precision`` bits, its
    smallest normal significand ``c_min`` and smallest exponent ``q_min``.
    """
    if -precision < q <= 0 and ((c >> -q) << -q) == c:
        # An integer below 2**precision: its digits, trailing zeros removed, are the shortest.
        sig = c >> -q
        exp10 = 0
    else:
        odd = c & 1
        cb = c << 2
        cbr = cb + 2
        if c != c_min or q == q_min:
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
        sig = 0
        if s >= 10:  # else s and s + 1 have one digit: as short as any
            sp10 = (s // 10) * 10
            upin = vbl <= sp10 << 2
            if upin != (((sp10 + 10) << 2) <= vbr):
                sig = sp10 if upin else sp10 + 10  # a shorter one lies in the interval
        if sig == 0:
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
    y1 = _mulhi64(g1, cp)
    if cython.compiled:
        z = ((g1 * cp) >> 1) + x1  # uint64 arithmetic wraps: no masks to load
        return (y1 + (z >> 63)) | ((z << 1) != 0)
    else:
        z = (((g1 * cp) & _MASK64) >> 1) + x1
        return (y1 + (z >> 63)) | (((z & _SCH_MASK63) + _SCH_MASK63) >> 63)


def _sch_rop32(g, cp):
    """Float32 rounded-odd product: floor(g cp / 2**95) (g < 2**63, cp < 2**61), last bit set
    if the 32 bits below it are not all zero."""
    x1 = _mulhi64(g, cp)
    return (x1 >> 31) | (((x1 & _MASK32) + _MASK32) >> 32)


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
