"""msgconv, part 1 of the twin: element kinds, byte-order tables, errors (see msgconv_py)."""

from __future__ import annotations

import struct
import sys
from array import array

try:
    import cython
except ImportError:  # pure twin running without Cython installed
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)


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
# The longest text of an element and its comma: float32 "-1234567800000000.0,",
# float64 "-2.2250738585072014e-308,".
_KIND_MAXTXT = (6, 4, 5, 7, 6, 12, 11, 21, 21, 21, 25)


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
