# cython: boundscheck=False, wraparound=False, annotation_typing=False
"""Ring buffer of serialized messages: the newest `duration_ns` of samples, capped in bytes.

This is the only implementation. It runs as plain Python and is compiled a second time by
Cython as ``ringbuf_c`` (C types in ``ringbuf_c.pxd``). The buffer keeps references to the
received ``bytes`` objects (no copy) in arrival order, in parallel circular arrays that
double when full. A push evicts from the old end while the span from the oldest to the
newest receive time exceeds ``duration_ns``, the payload total exceeds ``max_bytes``, or the
entry count exceeds ``max_entries``. Every push gets a sequence number (1, 2, ...), so a
reader can take "everything after what I saw" without gaps or repeats.

Not thread-safe: callers serialize push and snapshot (the recorder holds one lock).
"""

from __future__ import annotations

from array import array

try:
    import cython
except ImportError:  # pure twin running without Cython installed
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

__all__ = ["COMPILED", "Entry", "RingBuffer"]

COMPILED: bool = bool(cython.compiled)

# (seq, topic, received ns, source ns, data)
Entry = tuple

_MIN_CAPACITY = 16


def _int64s(n: int) -> array:
    return array("q", bytes(8 * n))


def _int32s(n: int) -> array:
    return array("i", bytes(4 * n))


class RingBuffer:
    """The newest serialized messages of every recorded topic, oldest first."""

    def __init__(self, duration_ns: int, max_bytes: int, max_entries: int = 1 << 20,
                 capacity: int = 1024) -> None:
        if duration_ns < 0 or max_bytes < 0 or max_entries < 1:
            raise ValueError("duration_ns and max_bytes must be >= 0, max_entries >= 1")
        cap = max(_MIN_CAPACITY, min(capacity, max_entries))
        self.duration_ns = duration_ns
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._cap = cap
        self._head = 0
        self._count = 0
        self._nbytes = 0
        self._seq = 0
        self._newest_ns = 0
        self._evicted = 0
        self._dropped = 0
        self._data: list[bytes | None] = [None] * cap
        self._topic = _int32s(cap)
        self._recv = _int64s(cap)
        self._src = _int64s(cap)
        self._seqs = _int64s(cap)

    # properties -----------------------------------------------------------------------------
    @property
    def count(self) -> int:
        """Messages held."""
        return self._count

    @property
    def nbytes(self) -> int:
        """Payload bytes held."""
        return self._nbytes

    @property
    def last_seq(self) -> int:
        """Sequence number of the newest push (0 before the first)."""
        return self._seq

    @property
    def first_seq(self) -> int:
        """Sequence number of the oldest message held (last_seq + 1 when empty)."""
        if self._count == 0:
            return self._seq + 1
        return self._seqs[self._head]

    @property
    def evicted(self) -> int:
        """Messages pushed out by age, size or count."""
        return self._evicted

    @property
    def dropped(self) -> int:
        """Messages refused because one alone exceeds max_bytes."""
        return self._dropped

    @property
    def capacity(self) -> int:
        """Slots allocated."""
        return self._cap

    def __len__(self) -> int:
        return self._count

    # hot path -------------------------------------------------------------------------------
    def push(self, topic: int, recv_ns: int, source_ns: int, data: bytes) -> int:
        """Append one message; returns its sequence number (0: refused, larger than max_bytes)."""
        size = len(data)
        if size > self.max_bytes:
            self._dropped += 1
            return 0
        if self._count == self._cap:
            if self._cap < self.max_entries:
                self._grow()
            else:
                self._pop()
        i = self._head + self._count
        if i >= self._cap:
            i -= self._cap
        self._seq += 1
        self._data[i] = data
        self._topic[i] = topic
        self._recv[i] = recv_ns
        self._src[i] = source_ns
        self._seqs[i] = self._seq
        self._count += 1
        self._nbytes += size
        if recv_ns > self._newest_ns:
            self._newest_ns = recv_ns
        horizon = self._newest_ns - self.duration_ns
        while self._count > 1 and (self._nbytes > self.max_bytes
                                   or self._recv[self._head] < horizon):
            self._pop()
        return self._seq

    def _pop(self) -> None:
        h = self._head
        data = self._data[h]
        self._nbytes -= len(data)  # type: ignore[arg-type]
        self._data[h] = None
        h += 1
        if h == self._cap:
            h = 0
        self._head = h
        self._count -= 1
        self._evicted += 1

    def _grow(self) -> None:
        new_cap = min(self._cap * 2, self.max_entries)
        data: list[bytes | None] = [None] * new_cap
        topic = _int32s(new_cap)
        recv = _int64s(new_cap)
        src = _int64s(new_cap)
        seqs = _int64s(new_cap)
        j = self._head
        for k in range(self._count):
            data[k] = self._data[j]
            topic[k] = self._topic[j]
            recv[k] = self._recv[j]
            src[k] = self._src[j]
            seqs[k] = self._seqs[j]
            j += 1
            if j == self._cap:
                j = 0
        self._data = data
        self._topic = topic
        self._recv = recv
        self._src = src
        self._seqs = seqs
        self._head = 0
        self._cap = new_cap

    # readers --------------------------------------------------------------------------------
    def trim(self, now_ns: int) -> int:
        """Evict messages older than now_ns - duration_ns (for idle periods); returns how many."""
        horizon = now_ns - self.duration_ns
        n = 0
        while self._count > 0 and self._recv[self._head] < horizon:
            self._pop()
            n += 1
        return n

    def snapshot(self, after_seq: int = 0, since_ns: int = 0, until_ns: int = -1) -> list:
        """Entries (seq, topic, recv_ns, source_ns, data) with seq > after_seq and
        since_ns <= recv_ns (<= until_ns unless negative), oldest first."""
        out = []
        j = self._head
        for _k in range(self._count):
            recv = self._recv[j]
            if self._seqs[j] > after_seq and recv >= since_ns and (until_ns < 0
                                                                    or recv <= until_ns):
                out.append((self._seqs[j], self._topic[j], recv, self._src[j], self._data[j]))
            j += 1
            if j == self._cap:
                j = 0
        return out

    def clear(self) -> None:
        """Drop every message (sequence numbers keep counting)."""
        while self._count:
            self._pop()
