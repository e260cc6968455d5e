# C declarations for ringbuf_py.py, compiled a second time as recorder.ringbuf_c.
cimport cython
from libc.stdint cimport int32_t, int64_t

cdef Py_ssize_t _MIN_CAPACITY


cdef class RingBuffer:
    cdef readonly int64_t duration_ns
    cdef readonly Py_ssize_t max_bytes
    cdef readonly Py_ssize_t max_entries
    cdef Py_ssize_t _cap
    cdef Py_ssize_t _head
    cdef Py_ssize_t _count
    cdef Py_ssize_t _nbytes
    cdef int64_t _seq
    cdef int64_t _newest_ns
    cdef Py_ssize_t _evicted
    cdef Py_ssize_t _dropped
    cdef list _data
    cdef int32_t[::1] _topic
    cdef int64_t[::1] _recv
    cdef int64_t[::1] _src
    cdef int64_t[::1] _seqs

    @cython.locals(size=Py_ssize_t, i=Py_ssize_t, horizon=int64_t)
    cpdef int64_t push(self, int32_t topic, int64_t recv_ns, int64_t source_ns,
                       bytes data) except -1

    @cython.locals(h=Py_ssize_t)
    cdef int _pop(self) except -1

    @cython.locals(new_cap=Py_ssize_t, k=Py_ssize_t, j=Py_ssize_t)
    cdef int _grow(self) except -1

    @cython.locals(horizon=int64_t, n=Py_ssize_t)
    cpdef Py_ssize_t trim(self, int64_t now_ns) except -1

    @cython.locals(_k=Py_ssize_t, j=Py_ssize_t, recv=int64_t)
    cpdef list snapshot(self, int64_t after_seq=*, int64_t since_ns=*, int64_t until_ns=*)

    cpdef clear(self)
