# C types for msgconv_py.py, which setup.py compiles a second time as gateway._fast.msgconv_c.
# Edit both files together: every name typed here must keep its meaning in the .py.
cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

# The high half of a 64x64-bit product: one instruction where the compiler has 128-bit ints.
cdef extern from *:
    """
    static inline uint64_t _c_mulhi64(uint64_t a, uint64_t b) {
    #ifdef __SIZEOF_INT128__
        return (uint64_t)(((unsigned __int128)a * b) >> 64);
    #else
        uint64_t a_lo = a & 0xFFFFFFFFu, a_hi = a >> 32, b_lo = b & 0xFFFFFFFFu, b_hi = b >> 32;
        uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi;
        uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xFFFFFFFFu) + lo_hi;
        return a_hi * b_hi + (hi_lo >> 32) + (cross >> 32);
    #endif
    }

    /* The unsigned value of the `size` bytes at q, little- or big-endian. */
    static inline uint64_t _c_load(const unsigned char* q, Py_ssize_t size, int little) {
        uint64_t v8; uint32_t v4; uint16_t v2;
        const int swap = little != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);
        switch (size) {
        case 8: memcpy(&v8, q, 8); return swap ? __builtin_bswap64(v8) : v8;
        case 4: memcpy(&v4, q, 4); return swap ? __builtin_bswap32(v4) : v4;
        case 2: memcpy(&v2, q, 2); return swap ? __builtin_bswap16(v2) : v2;
        default: return q[0];
        }
    }

    #if defined(__SSE2__)
    #include <emmintrin.h>
    #endif
    /* 1 when the first `size` (<= 16) of the 16 bytes at q are printable ASCII other than
       '"' and '\\', 0 when one is not, -1 without SSE2 (the caller tests them otherwise). */
    static inline int _c_plain16(const unsigned char* q, Py_ssize_t size) {
    #if defined(__SSE2__)
        const __m128i v = _mm_loadu_si128((const __m128i*)q);
        /* signed: the bytes >= 0x80 are below 0x20 too */
        const __m128i bad = _mm_or_si128(
            _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
                         _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7F))),
            _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(0x22)),
                         _mm_cmpeq_epi8(v, _mm_set1_epi8(0x5C))));
        return (_mm_movemask_epi8(bad) & ((1 << size) - 1)) == 0;
    #else
        (void)q; (void)size;
        return -1;
    #endif
    }

    static inline int _c_bitlen64(uint64_t v) {  /* v > 0 */
    #if defined(__GNUC__) || defined(__clang__)
        return 64 - __builtin_clzll(v);
    #else
        int n = 0;
        while (v) { v >>= 1; n++; }
        return n;
    #endif
    }
    """
    uint64_t _c_mulhi64(uint64_t a, uint64_t b) noexcept
    int _c_bitlen64(uint64_t v) noexcept
    int _c_plain16(const unsigned char* q, Py_ssize_t size) noexcept
    uint64_t _c_load(const unsigned char* q, Py_ssize_t size, bint little) noexcept


# -- tables and constants (module globals of the .py) ---------------------------------------
cdef int _K_BOOL, _K_U8, _K_I8, _K_I16, _K_U16, _K_I32, _K_U32, _K_I64, _K_U64
cdef int _K_F32, _K_F64, _K_STR, _K_WSTR, _K_CHAR, _K_WCHAR, _K_MSG
cdef int _SCALAR, _ARRAY, _SEQ
cdef Py_ssize_t _KIND_SIZE[16]
cdef bint _KIND_SIGNED[11]
cdef Py_ssize_t _KIND_MAXTXT[11]
cdef uint64_t _SIGN_BIT[9]
cdef uint64_t _SIZE_MASK[9]
cdef uint64_t _MASK64, _MASK32
cdef uint64_t _POW10[20]
cdef bytes _DIGITS2, _U8_SLOTS, _U8_LENS
cdef bint _NATIVE_LITTLE
cdef bytes _PLAIN_ASCII

cdef uint64_t _F64_MANTISSA, _F64_HIDDEN_BIT, _F64_EXPONENT, _F64_ABS
cdef int _F64_Q_MIN, _F32_Q_MIN
cdef long long _SCH_LOG10_2, _SCH_LOG10_3Q, _SCH_LOG2_10
cdef uint64_t _SCH_MASK63
cdef uint64_t _SCH_G1[617]
cdef uint64_t _SCH_G0[617]
cdef int _DB_MIN_K, _DB_MAX_K
cdef uint64_t _DB_HI[619]
cdef uint64_t _DB_LO[619]
cdef uint64_t _DIV_POW10_MAGIC[17]
cdef int _DIV_POW10_SHIFT[17]
cdef uint64_t _SWAR_LANES_7F, _SWAR_LANES_0F, _SWAR_ASCII


# -- shortest float digits (Schubfach) --------------------------------------------------------
cdef uint64_t _mulhi64(uint64_t a, uint64_t b) noexcept


cdef class _Decimal:
    cdef uint64_t sig
    cdef int exp10


@cython.locals(ieee_exponent=int, c=uint64_t, q=int)
cdef inline int _f64_shortest(uint64_t bits, _Decimal out) noexcept

@cython.locals(ieee_exponent=int, c=uint64_t, q=int, sig=uint32_t, exp10=int, odd=uint64_t,
               cb=uint64_t, cbr=uint64_t, cbl=uint64_t, k=int, h=int, g=uint64_t, vb=uint32_t,
               vbl=uint32_t, vbr=uint32_t, s=uint32_t, s10=uint32_t, sp10=uint32_t, upin=bint)
cdef inline int _f32_shortest(uint32_t bits, _Decimal out) noexcept

@cython.locals(sig=uint64_t, exp10=int, odd=uint64_t, cb=uint64_t, cbr=uint64_t, cbl=uint64_t,
               k=int, h=int, g1=uint64_t, g0=uint64_t, vb=uint64_t, vbl=uint64_t,
               vbr=uint64_t, s=uint64_t, sp10=uint64_t, upin=bint)
cdef inline int _shortest(uint64_t c, int q, int precision, uint64_t c_min, int q_min,
                          _Decimal out) noexcept

@cython.locals(even=bint, minus_k=int, hi=uint64_t, lo=uint64_t, beta=int, deltai=uint64_t,
               two_fc=uint64_t, u=uint64_t, y=uint64_t, z_lo=uint64_t, zi=uint64_t,
               sig=uint64_t, r=uint64_t, small=bint, exp10=int, x=int, dist=uint64_t,
               approx_y_parity=int)
cdef inline int _dragonbox(uint64_t c, int q, _Decimal out) noexcept

@cython.locals(high=uint64_t, low=uint64_t, parity=int, integer=int)
cdef inline int _db_parity(uint64_t two_f, uint64_t hi, uint64_t lo, int beta) noexcept

@cython.locals(x1=uint64_t, y1=uint64_t, z=uint64_t)
cdef inline uint64_t _sch_rop(uint64_t g1, uint64_t g0, uint64_t cp) noexcept

@cython.locals(x1=uint64_t)
cdef inline uint32_t _sch_rop32(uint64_t g, uint64_t cp) noexcept

@cython.locals(bits=uint32_t, cur=_Cursor)
cpdef str float32_repr(double value)

@cython.locals(bits=uint64_t, cur=_Cursor)
cpdef str float64_repr(double value)



# -- number text into the output buffer -------------------------------------------------------
@cython.locals(t=int)
cdef inline int _decimal_length(uint64_t v) noexcept

@cython.locals(merged=uint64_t, high=uint32_t, top=uint64_t, hundreds=uint64_t, tens=uint64_t)
cdef inline uint64_t _ascii8(uint32_t x) noexcept

@cython.locals(word=uint64_t, digits=cython.p_const_char, high=uint32_t, low=uint32_t)
cdef inline int _w_8digits(char* o, uint32_t x) noexcept

@cython.locals(digits=cython.p_const_char, small=uint32_t)
cdef inline int _w_digits(char* o, uint64_t v, int count) noexcept

@cython.locals(word=uint64_t, high=uint64_t, low=uint64_t, top=uint64_t, skip=int)
cdef inline int _w_digits_fast(char* o, uint64_t v, int length) noexcept

@cython.locals(word=uint64_t, high=uint64_t, low=uint64_t, top=uint64_t, skip=int)
cdef inline int _w_digits_long(char* o, uint64_t v, int length) noexcept

@cython.locals(word=uint64_t, high=uint64_t, low=uint64_t, top=uint64_t, head=int)
cdef inline char* _w_fraction(char* o, uint64_t digits, int length, int point) noexcept

@cython.locals(length=int)
cdef inline char* _w_uint(char* o, uint64_t v) noexcept

cdef char* _w_exponent(char* o, uint64_t digits, int length, int x) noexcept

@cython.locals(length=int, point=int, fraction_length=int, whole=uint64_t, fraction=uint64_t,
               chunks=int, end=cython.p_char)
cdef char* _w_decimal(char* o, uint64_t digits, int exp10) noexcept

@cython.locals(length=int, point=int)
cdef inline char* _w_common(char* o, uint64_t digits, int exp10) noexcept

cdef inline char* _w_f64(char* o, uint64_t bits, _Decimal dec) noexcept
cdef inline char* _w_f32(char* o, uint32_t bits, _Decimal dec) noexcept


# -- reading CDR, writing JSON ----------------------------------------------------------------
cdef uint64_t _SWAR_01, _SWAR_80, _SWAR_SPACE, _SWAR_QUOTE, _SWAR_BACKSLASH
cdef uint64_t _SWAR_HEAD[8]
cdef char* _SPARE_BUF
cdef Py_ssize_t _SPARE_CAP, _SPARE_MAX, _ROOM

@cython.locals(t=uint64_t, u=uint64_t, found=uint64_t)
cdef inline uint64_t _swar_special(uint64_t w) noexcept



@cython.final
cdef class _Cursor(_Decimal):
    cdef bytes data
    cdef const unsigned char* p
    cdef Py_ssize_t pos
    cdef Py_ssize_t end
    cdef bint little
    cdef char* buf
    cdef Py_ssize_t n
    cdef Py_ssize_t cap
    cdef list out

    @cython.locals(cap=Py_ssize_t)
    cdef int start(self, bytes data, Py_ssize_t size_hint, bint little) except -1
    cdef int fail(self, str what) except -1
    cdef inline int need(self, Py_ssize_t size) except -1
    cdef inline void align(self, Py_ssize_t size) noexcept
    cdef bytes result(self)

    @cython.locals(cap=Py_ssize_t, grown=cython.p_void)
    cdef inline int reserve(self, Py_ssize_t extra) except -1

    @cython.locals(size=Py_ssize_t, src=cython.p_const_char)
    cdef int put(self, bytes text) except -1

    @cython.locals(src=cython.p_const_char)
    cdef inline int put_padded(self, bytes text, Py_ssize_t size) except -1

    cdef inline int put_c(self, int c) except -1

    cdef char* w_prim(self, char* o, int kind, uint64_t bits) noexcept

    @cython.locals(v=uint64_t)
    cdef inline Py_ssize_t read_u32(self) except -1

    @cython.locals(size=Py_ssize_t, o=cython.p_char)
    cdef int put_prim(self, int kind) except -1

    @cython.locals(size=Py_ssize_t, q=cython.p_const_uchar, o=cython.p_char,
                   slots=cython.p_const_char, lens=cython.p_const_uchar, i=Py_ssize_t,
                   b=cython.uchar, little=bint)
    cdef int put_prims(self, int kind, Py_ssize_t count) except -1

    @cython.locals(size=Py_ssize_t, start=Py_ssize_t, q=cython.p_const_uchar, o=cython.p_char,
                   plain=cython.p_const_uchar, i=Py_ssize_t, c=cython.uchar, raw=bytes,
                   word=uint64_t, special=uint64_t)
    cdef int put_str(self) except -1

    @cython.locals(count=Py_ssize_t)
    cdef int put_wstr(self) except -1


# -- plans and the interpreter ----------------------------------------------------------------
@cython.final
cdef class _Plan:
    cdef readonly str type_name
    cdef readonly list fields
    cdef readonly bint empty
    cdef readonly Py_ssize_t min_size


@cython.final
cdef class _Field:
    cdef readonly bytes head
    cdef readonly bytes head_padded
    cdef readonly Py_ssize_t head_len
    cdef readonly int kind
    cdef readonly int shape
    cdef readonly Py_ssize_t count
    cdef readonly Py_ssize_t min_size
    cdef readonly _Plan sub


@cython.locals(f=_Field, count=Py_ssize_t, size=Py_ssize_t, i=Py_ssize_t)
cdef int _emit_struct(_Cursor cur, _Plan plan) except -1

@cython.locals(unit=Py_ssize_t)
cdef int _emit_one(_Cursor cur, int kind, _Plan sub) except -1


@cython.final
cdef class Converter:
    cdef readonly str type_name
    cdef readonly _Plan plan

    @cython.locals(size=Py_ssize_t, cur=_Cursor, head=cython.p_const_uchar, result=bytes)
    cpdef bytes to_json(self, data)


cdef _Cursor _SPARE_CURSOR
