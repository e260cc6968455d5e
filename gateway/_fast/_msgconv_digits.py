"""msgconv, part 3 of the twin: number text written straight into the compiled output buffer.

Compiled twin only (the pure twin formats with ``repr`` and ``%d``): every writer takes the
position ``o`` in a buffer the caller has reserved and returns the end of what it wrote.
"""

from __future__ import annotations

# mypy: disable-error-code="name-defined"
# (compiled twin: memcpy and _c_bitlen64 are C names the .pxd declares, which mypy does not
# read; ruff's F821 still checks names, the C ones marked `noqa: F821`)

try:
    import cython
except ImportError:  # pure twin running without Cython installed
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

# twin: joined-begin (one compiled module in msgconv_c: setup.py drops this block)
from ._msgconv_floats import (
    _F64_ABS,
    _F64_EXPONENT,
    _f32_shortest,
    _f64_shortest,
    _mulhi64,
)
from ._msgconv_tables import _DIGITS2, _NATIVE_LITTLE, _POW10

# twin: joined-end


def _div_pow10_magic(k: int) -> tuple[int, int]:
    """(m, s) with v // 10**k == (v * m >> 64) >> s for every v < 2**57."""
    d = 10**k
    shift = d.bit_length() - 1  # 2**shift <= d keeps m below 2**64; the error stays < 1/d
    return -(-(1 << (64 + shift)) // d), shift


_DIV_POW10_MAGIC = [_div_pow10_magic(k)[0] if k else 0 for k in range(17)]
_DIV_POW10_SHIFT = [_div_pow10_magic(k)[1] if k else 0 for k in range(17)]


def _decimal_length(v):
    """Number of decimal digits of an unsigned 64-bit value (1 for 0)."""
    v |= 1  # the same length, and 0 has one digit
    t = (_c_bitlen64(v) * 1233) >> 12  # noqa: F821 - floor(log10) or one more
    return t + 1 - (v < _POW10[t])


# Eight digits at once (little-endian hosts): two 4-digit lanes split into 2-digit then
# 1-digit lanes by multiply-shift divisions, one ASCII byte per digit, one 8-byte store.
_SWAR_LANES_7F = 0x7F0000007F
_SWAR_LANES_0F = 0x000F000F000F000F
_SWAR_ASCII = 0x3030303030303030


def _ascii8(x):
    """The 8 digits of ``x`` < 10**8 as ASCII, the first in the low byte."""
    high = x // 10000
    merged = x - high * 10000  # widened to 64 bits before the shift
    merged = (merged << 32) | high
    top = ((merged * 10486) >> 20) & _SWAR_LANES_7F  # lane // 100
    hundreds = ((merged - 100 * top) << 16) + top
    tens = ((hundreds * 103) >> 10) & _SWAR_LANES_0F  # lane // 10
    tens += (hundreds - 10 * tens) << 8
    return tens + _SWAR_ASCII


def _w_8digits(o, x):
    """Writes exactly 8 digits of ``x`` < 10**8 at ``o``."""
    if _NATIVE_LITTLE:
        word = _ascii8(x)
        memcpy(o, cython.address(word), 8)  # noqa: F821
    else:
        digits = _DIGITS2
        high = x // 10000
        low = x - high * 10000
        memcpy(o, digits + (high // 100) * 2, 2)  # noqa: F821
        memcpy(o + 2, digits + (high % 100) * 2, 2)  # noqa: F821
        memcpy(o + 4, digits + (low // 100) * 2, 2)  # noqa: F821
        memcpy(o + 6, digits + (low % 100) * 2, 2)  # noqa: F821
    return 0


def _w_digits(o, v, count):
    """Writes exactly ``count`` digits of ``v`` (zero-padded on the left) at ``o``."""
    digits = _DIGITS2
    while count > 8:
        count -= 8
        _w_8digits(o + count, v % 100000000)
        v //= 100000000
    small = v
    while count >= 2:
        count -= 2
        memcpy(o + count, digits + (small % 100) * 2, 2)  # noqa: F821
        small //= 100
    if count:
        o[0] = 48 + small
    return 0


def _w_digits_fast(o, v, length):
    """Writes the ``length`` digits of ``v`` < 10**17 at ``o``; junk may follow up to o + 8."""
    if not _NATIVE_LITTLE or length <= 2:
        return _w_digits(o, v, length)  # one or two digits: one table copy
    if length <= 8:
        word = _ascii8(v) >> ((8 - length) * 8)  # leading zeros shifted out
        memcpy(o, cython.address(word), 8)  # noqa: F821
        return 0
    return _w_digits_long(o, v, length)


def _w_digits_long(o, v, length):
    """Writes the 9 to 17 digits of ``v`` at ``o``, junk up to o + 17 (little-endian hosts).

    Small and branch-free: inlined into the float loops (_w_digits_fast is not).
    """
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


def _w_fraction(o, digits, length, point):
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


def _w_uint(o, v):
    """Writes the decimal digits of an unsigned 64-bit value; returns the end."""
    length = _decimal_length(v)
    _w_digits(o, v, length)
    return o + length


def _w_exponent(o, digits, length, x):
    """Writes ``digits`` as d.ddd then 'e' and the signed exponent ``x``; returns the end."""
    _w_digits_fast(o + 1, digits, length)
    o[0] = o[1]
    if length > 1:
        o[1] = 46  # '.'
        o += length + 1
    else:
        o += 1
    o[0] = 101  # 'e'
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
    return o + 4


def _w_decimal(o, digits, exp10):
    """Writes ``digits * 10**exp10`` laid out as Python's float repr does; returns the end.

    Needs 40 reserved bytes: fixed-size copies of digits and zeros may run past the text.
    """
    length = _decimal_length(digits)
    point = length + exp10
    if _NATIVE_LITTLE and 0 < point < length:
        return _w_fraction(o, digits, length, point)
    if point <= -4 or point > 16:
        return _w_exponent(o, digits, length, point - 1)
    if point <= 0:
        memcpy(o, b"0.000", 5)  # noqa: F821
        _w_digits_fast(o + 2 - point, digits, length)
        return o + 2 - point + length
    if point >= length:
        _w_digits_fast(o, digits, length)
        memcpy(o + length, b"0000000000000000", 16)  # noqa: F821
        o[point] = 46
        o[point + 1] = 48
        return o + point + 2
    if point <= 4:
        # Digits one place to the right, then the integer digits back over the gap:
        # byte reads of bytes just stored (store forwarding), no division.
        _w_digits(o + 1, digits, length)
        o[0] = o[1]
        if point > 1:
            o[1] = o[2]
            if point > 2:
                o[2] = o[3]
                if point > 3:
                    o[3] = o[4]
        o[point] = 46  # '.'
        return o + length + 1
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
            _w_8digits(end, fraction % 100000000)
            fraction //= 100000000
            chunks -= 1
    else:
        _w_digits(o + point + 1, fraction, fraction_length)
    o[point] = 46  # '.'
    _w_digits(o, whole, point)
    return o + length + 1


def _w_common(o, digits, exp10):
    """Writes ``digits * 10**exp10`` as _w_decimal does: d.ddd and 0.0ddd laid out here
    (inlined into the array loops), the other layouts by a call to _w_decimal.
    """
    length = _decimal_length(digits)
    point = length + exp10
    if _NATIVE_LITTLE:
        if 0 < point < length:
            return _w_fraction(o, digits, length, point)
        if -4 < point <= 0:
            memcpy(o, b"0.000", 5)  # noqa: F821
            if length > 8:  # the common case: no call
                _w_digits_long(o + 2 - point, digits, length)
            else:
                _w_digits_fast(o + 2 - point, digits, length)
            return o + 2 - point + length
    return _w_decimal(o, digits, exp10)


def _w_f64(o, bits, dec):
    """Writes the JSON text of the float64 ``bits`` (40 bytes reserved); returns the end."""
    if (bits & _F64_EXPONENT) == _F64_EXPONENT:
        memcpy(o, b"null", 4)  # noqa: F821
        return o + 4
    if bits >> 63:
        o[0] = 45  # '-'
        o += 1
    if (bits & _F64_ABS) == 0:
        memcpy(o, b"0.0", 3)  # noqa: F821
        return o + 3
    _f64_shortest(bits, dec)
    return _w_common(o, dec.sig, dec.exp10)


def _w_f32(o, bits, dec):
    """Writes the JSON text of the float32 ``bits`` (40 bytes reserved); returns the end."""
    if (bits & 0x7F800000) == 0x7F800000:
        memcpy(o, b"null", 4)  # noqa: F821
        return o + 4
    if bits >> 31:
        o[0] = 45  # '-'
        o += 1
    if (bits & 0x7FFFFFFF) == 0:
        memcpy(o, b"0.0", 3)  # noqa: F821
        return o + 3
    _f32_shortest(bits, dec)
    return _w_common(o, dec.sig, dec.exp10)
