"""msgconv, part 4 of the twin: the cursor reading CDR input and writing JSON output."""

from __future__ import annotations

# mypy: disable-error-code="name-defined,has-type"
# (compiled twin: memcpy, malloc, _c_* and the _SPARE_* globals are C names the .pxd declares,
# which mypy does not read; ruff's F821 still checks names, the C ones marked `noqa: F821`)
from array import array

import orjson

try:
    import cython
except ImportError:  # pure twin running without Cython installed
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

# twin: joined-begin (one compiled module in msgconv_c: setup.py drops this block)
from ._msgconv_digits import _w_f32, _w_f64, _w_uint
from ._msgconv_floats import _Decimal, _f32_text, _f64_text
from ._msgconv_tables import (
    _ARRAY_CODE,
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


# Compiled twin: one output buffer of at most this size is kept between cursors.
_SPARE_MAX = 1 << 20
# Room reserved for one number: its text and the junk a digit writer may store past it.
_ROOM = 48


# Eight string bytes at once: is any of them outside printable ASCII, '"' or '\\'?
# Exact tests per byte lane (a borrow or carry only crosses out of a lane already found).
_SWAR_01 = 0x0101010101010101
_SWAR_80 = 0x8080808080808080
_SWAR_SPACE = 0x2020202020202020
_SWAR_QUOTE = 0x2222222222222222
_SWAR_BACKSLASH = 0x5C5C5C5C5C5C5C5C
# The high bits of the first r byte lanes (little-endian): the bytes of a partial word.
_SWAR_HEAD = [_SWAR_80 & ((1 << (8 * r)) - 1) for r in range(8)]


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
        if cython.compiled:
            global _SPARE_BUF, _SPARE_CAP
            cap = size_hint if size_hint > 64 else 64
            if self.buf == cython.NULL:  # a new cursor; a reused one keeps its buffer
                if _SPARE_BUF != cython.NULL:  # the last cursor's buffer
                    self.buf = _SPARE_BUF
                    self.cap = _SPARE_CAP
                    _SPARE_BUF = cython.NULL
                else:
                    self.buf = cython.cast(cython.p_char, malloc(cap))  # noqa: F821
                    if self.buf == cython.NULL:
                        raise MemoryError()
                    self.cap = cap
            if self.cap < cap:
                self.reserve(cap)
        else:
            self.cap = 0
            self.out = []
        return 0

    def __dealloc__(self):
        if cython.compiled:
            global _SPARE_BUF, _SPARE_CAP
            if _SPARE_BUF == cython.NULL and self.cap <= _SPARE_MAX:
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

    def w_prim(self, o, kind, bits):
        """Writes one primitive given its raw bits at ``o`` (compiled twin); returns the end."""
        if kind == _K_F64:
            return _w_f64(o, bits, self)
        if kind == _K_F32:
            return _w_f32(o, bits, self)
        if kind == _K_BOOL:
            if bits:
                memcpy(o, b"true", 4)  # noqa: F821
                return o + 4
            memcpy(o, b"false", 5)  # noqa: F821
            return o + 5
        if _KIND_SIGNED[kind] and bits & _SIGN_BIT[kind]:
            o[0] = 45  # '-'
            return _w_uint(o + 1, (~bits + 1) & _SIZE_MASK[kind])
        return _w_uint(o, bits)

    # -- input ----------------------------------------------------------------------

    def read_u32(self):
        self.align(4)
        self.need(4)
        if cython.compiled:
            v = _c_load(self.p + self.pos, 4, self.little)  # noqa: F821
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
            self.reserve(_ROOM)
            o = self.buf + self.n
            self.n = self.w_prim(o, kind, _c_load(self.p + self.pos, size, self.little)) - self.buf  # noqa: F821
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
                # Room for every element at once: the text of one is at most _KIND_MAXTXT
                # (comma included) and a writer may store junk up to _ROOM past its start.
                self.reserve(count * _KIND_MAXTXT[kind] + _ROOM)
                o = self.buf + self.n
                little = self.little
                if kind == _K_F64:
                    for i in range(count):
                        o = _w_f64(o, _c_load(q + i * 8, 8, little), self)  # noqa: F821
                        o[0] = 44  # ','
                        o += 1
                elif kind == _K_F32:
                    for i in range(count):
                        o = _w_f32(o, _c_load(q + i * 4, 4, little), self)  # noqa: F821
                        o[0] = 44
                        o += 1
                else:
                    for i in range(count):
                        o = self.w_prim(o, kind, _c_load(q + i * size, size, little))  # noqa: F821
                        o[0] = 44
                        o += 1
                self.n = (o - self.buf) - 1  # the last comma
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
            self.reserve(size + 18)
            q = self.p + start
            o = self.buf + self.n
            o[0] = 34  # '"'
            if size <= 16 and start + 16 <= self.end and _c_plain16(q, size) == 1:  # noqa: F821
                # A short string (names, ids, keys) in one 16-byte test and copy; the bytes
                # after it are input that follows, not tested, overwritten in the output.
                memcpy(o + 1, q, 16)  # noqa: F821
                o[size + 1] = 34
                self.n += size + 2
                return 0
            i = 0
            word = 0
            special = 0
            while i + 8 <= size:  # eight bytes at a time while none needs escaping
                memcpy(cython.address(word), q + i, 8)  # noqa: F821
                special = _swar_special(word)
                if special:
                    break
                memcpy(o + 1 + i, cython.address(word), 8)  # noqa: F821
                i += 8
            if special == 0 and i < size:
                if _NATIVE_LITTLE and start + i + 8 <= self.end:
                    # The last bytes in one word that reads on into the input after the
                    # string: only their lanes are tested (carries move to higher lanes,
                    # the later bytes); what is stored past them is overwritten below.
                    memcpy(cython.address(word), q + i, 8)  # noqa: F821
                    special = _swar_special(word) & _SWAR_HEAD[size - i]
                    memcpy(o + 1 + i, cython.address(word), 8)  # noqa: F821
                else:
                    plain = _PLAIN_ASCII
                    while i < size:
                        c = q[i]
                        if not plain[c]:
                            special = 1
                            break
                        o[i + 1] = c
                        i += 1
            if special == 0:
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
