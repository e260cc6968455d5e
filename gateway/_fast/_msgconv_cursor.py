"""msgconv, part 3 of the twin: the cursor reading CDR input and writing JSON output."""

from __future__ import annotations

from array import array

import orjson

try:
    import cython
except ImportError:  # pure twin running without Cython installed
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

# twin: joined-begin (one compiled module in msgconv_c: setup.py drops this block)
from ._msgconv_floats import (
    _DIV_POW10_MAGIC,
    _DIV_POW10_SHIFT,
    _F64_ABS,
    _F64_EXPONENT,
    _ascii8,
    _Decimal,
    _decimal_length,
    _f32_shortest,
    _f32_text,
    _f64_shortest,
    _f64_text,
    _mulhi64,
)
from ._msgconv_tables import (
    _ARRAY_CODE,
    _DIGITS2,
    _F64_BE,
    _F64_LE,
    _K_BOOL,
    _K_F32,
    _K_F64,
    _K_U8,
    _K_U32,
    _KIND_MAXTXT,
    _KIND_SIGNED,
    _KIND_SIZE,
    _NATIVE_LITTLE,
    _POW10,
    _SIGN_BIT,
    _SIZE_MASK,
    _STRUCT_BE,
    _STRUCT_LE,
    _U8_LENS,
    _U8_SLOTS,
    _U8_TXT,
    _U32_BE,
    _U32_LE,
    CdrError,
)

# twin: joined-end


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



# Compiled twin: one output buffer of at most this size is kept between cursors.
_SPARE_MAX = 1 << 20


# Eight string bytes at once: is any of them outside printable ASCII, '"' or '\\'?
# Exact tests per byte lane (a borrow or carry only crosses out of a lane already found).
_SWAR_01 = 0x0101010101010101
_SWAR_80 = 0x8080808080808080
_SWAR_SPACE = 0x2020202020202020
_SWAR_QUOTE = 0x2222222222222222
_SWAR_BACKSLASH = 0x5C5C5C5C5C5C5C5C


def _swar_special(w):
    """Compiled twin: non-zero when a byte of ``w`` is < 0x20, >= 0x7F, '"' or '\\'."""
    t = w ^ _SWAR_QUOTE
    u = w ^ _SWAR_BACKSLASH
    found = (w | (w + _SWAR_01)) & _SWAR_80  # >= 0x7F
    found |= (w - _SWAR_SPACE) & ~w  # < 0x20
    found |= (t - _SWAR_01) & ~t  # == '"'
    found |= (u - _SWAR_01) & ~u  # == '\\'
    return found & _SWAR_80


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
            global _SPARE_BUF, _SPARE_CAP
            cap = size_hint if size_hint > 64 else 64
            if _SPARE_BUF != cython.NULL:  # noqa: F821 - the last cursor's buffer, reused
                self.buf = _SPARE_BUF  # noqa: F821
                self.cap = _SPARE_CAP  # noqa: F821
                _SPARE_BUF = cython.NULL
                if self.cap < cap:
                    self.reserve(cap)
            else:
                self.cap = cap
                self.buf = cython.cast(cython.p_char, malloc(self.cap))  # noqa: F821
                if self.buf == cython.NULL:
                    raise MemoryError()
        else:
            self.out = []
        return 0

    def __dealloc__(self):
        if cython.compiled:
            global _SPARE_BUF, _SPARE_CAP
            if _SPARE_BUF == cython.NULL and self.cap <= _SPARE_MAX:  # noqa: F821
                _SPARE_BUF = self.buf  # kept for the next cursor (the GIL is held)
                _SPARE_CAP = self.cap
            else:
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
            i = 0
            word = 0
            while i + 8 <= size:  # eight bytes at a time while none needs escaping
                memcpy(cython.address(word), q + i, 8)  # noqa: F821
                if _swar_special(word):
                    break
                memcpy(o + 1 + i, cython.address(word), 8)  # noqa: F821
                i += 8
            while i < size:
                c = q[i]
                if not plain[c]:
                    break
                o[i + 1] = c
                i += 1
            if i == size:
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
# orjson.dumps leaves each result in a 4 KiB block: a copy keeps 256 of them in 9 KiB, not 1 MiB.
_CHAR_JSON = [bytes(memoryview(orjson.dumps(chr(i)))) for i in range(256)]
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
