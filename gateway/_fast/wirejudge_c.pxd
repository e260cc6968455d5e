# C types for wirejudge_py.py, which setup.py compiles a second time as gateway._fast.wirejudge_c.
# Edit both files together: every name typed here must keep its meaning in the .py.
cimport cython

cdef Py_ssize_t MAX_CHUNK, MAX_HEADERS
cdef bytes _VERSION, _END
cdef tuple _ASIDE


cdef inline bint _token(unsigned char c) noexcept

cdef inline unsigned char _lower(unsigned char c) noexcept

@cython.locals(k=Py_ssize_t)
cdef bint _same(bytes data, Py_ssize_t a, Py_ssize_t b, Py_ssize_t n)

@cython.locals(k=Py_ssize_t)
cdef bint _named(bytes data, Py_ssize_t at, Py_ssize_t n, bytes name)

@cython.locals(k=Py_ssize_t)
cdef bint _has(bytes data, Py_ssize_t n, Py_ssize_t at, bytes lit)

@cython.locals(p=Py_ssize_t, end=Py_ssize_t)
cdef bint _seen(bytes data, Py_ssize_t first, Py_ssize_t start, Py_ssize_t length)

cdef bint _keep_alive(bytes data, Py_ssize_t start, Py_ssize_t end)

@cython.locals(n=Py_ssize_t, i=Py_ssize_t, target_end=Py_ssize_t, pos=Py_ssize_t,
               first=Py_ssize_t, count=Py_ssize_t, host=bint, start=Py_ssize_t,
               length=Py_ssize_t, value=Py_ssize_t, name=bytes)
cpdef judge(bytes data)
