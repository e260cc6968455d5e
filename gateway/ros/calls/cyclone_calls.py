"""Calling services served through Cyclone DDS (rmw_cyclonedds_cpp), whose requests differ.

Both rmws name a service's DDS topics alike (`rq/<service>Request`, `rr/<service>Reply`), but
rmw_fastrtps sends a request's identity in the RTPS message (its related sample identity) while
rmw_cyclonedds puts it in the sample itself: a header of the client's id (`uint64`) and the
sequence number (`int64`) before the request's fields, echoed before the reply's. A Cyclone
server cannot read a Fast DDS request ("deserialization failed") and never answers it.

So a service whose servers are all Cyclone participants (RTPS vendor id 0x0110 in their GUID)
is called here as rmw_cyclonedds's own client would: a raw writer of `rq/...Request` and a raw
reader of `rr/...Reply` (ros/dds/_rawtopic.py, with the request and response types' DDS names),
samples built as CDR encapsulation, header, then the message serialized by rclpy (the header
is 16 bytes, so the fields keep their CDR alignment), and replies taken by polling while a
call waits, matched on the client id and sequence number.
"""

from __future__ import annotations

import asyncio
import logging
import random
import struct
import time
from typing import Any

from rclpy.serialization import deserialize_message, serialize_message

from ..dds._rawtopic import RawTopicReader, RawTopicWriter
from ..graph.nameless import vendor_of
from ..interfaces.described import BorrowedTypeSupport

log = logging.getLogger(__name__)

CYCLONE = "cyclone"
HEADER = struct.Struct("<Qq")  # client id, sequence number (little-endian, as encapsulated)
ENCAPSULATION_LE = b"\x00\x01\x00\x00"
POLL_MIN_S = 0.001
POLL_MAX_S = 0.02
NO_HASH = "RIHS01_" + "0" * 64
MATCH_SETTLE_S = 0.5  # after both ends matched, before the first request (made once per client)
_BORROWED: dict[tuple[str, str], BorrowedTypeSupport] = {}


def servers_are_cyclone(node: Any, service: str) -> bool:
    """True when the service has servers on the graph and every one is a Cyclone DDS
    participant (blocking: a graph pool thread)."""
    infos = node.get_subscriptions_info_by_topic(f"rq{_absolute(service)}Request",
                                                 no_mangle=True)
    return bool(infos) and all(vendor_of(bytes(i.endpoint_gid)) == CYCLONE for i in infos)


def _absolute(service: str) -> str:
    return service if service.startswith("/") else "/" + service


def _borrowed(type_name: str, type_hash: str) -> BorrowedTypeSupport:
    key = (type_name, type_hash)
    ts = _BORROWED.get(key)
    if ts is None:
        ts = _BORROWED[key] = BorrowedTypeSupport(type_name, type_hash)
    return ts


def _hash_of(infos: list[Any]) -> str:
    """The RIHS01 text of the first endpoint that announced a type hash, else zeros."""
    for info in infos:
        h = getattr(info, "topic_type_hash", None)
        text = str(h) if h is not None else ""
        if text.startswith("RIHS01_") and text != NO_HASH:
            return text
    return NO_HASH


def encode_request(cdr: bytes, client_id: int, seq: int) -> bytes:
    """A serialized request (CDR with its encapsulation) as rmw_cyclonedds sends it."""
    if len(cdr) < 4 or cdr[1] != 1:
        raise ValueError("expected little-endian CDR with its encapsulation header")
    return cdr[:4] + HEADER.pack(client_id, seq) + cdr[4:]


def decode_reply(sample: bytes) -> tuple[int, int, bytes]:
    """Client id, sequence number and the reply's CDR (with an encapsulation) of a sample."""
    if len(sample) < 4 + HEADER.size or sample[1] != 1:
        raise ValueError(f"not a little-endian rmw_cyclonedds reply ({len(sample)} bytes)")
    client_id, seq = HEADER.unpack_from(sample, 4)
    return client_id, seq, sample[:4] + sample[4 + HEADER.size:]


class CycloneClient:
    """A client of one service served through Cyclone DDS (made on a graph pool thread)."""

    def __init__(self, node: Any, srv_cls: Any, name: str, type_name: str) -> None:
        self.name = _absolute(name)
        self.srv_cls = srv_cls
        pkg, _, short = type_name.split("/")
        readers = node.get_subscriptions_info_by_topic(f"rq{self.name}Request", no_mangle=True)
        writers = node.get_publishers_info_by_topic(f"rr{self.name}Reply", no_mangle=True)
        req_ts = _borrowed(f"{pkg}/srv/{short}_Request", _hash_of(readers))
        rep_ts = _borrowed(f"{pkg}/srv/{short}_Response", _hash_of(writers))
        self._writer = RawTopicWriter(node, None, f"rq{self.name}Request", depth=100,
                                      transient_local=False, type_support=req_ts.address)
        try:
            self._reader = RawTopicReader(node, None, f"rr{self.name}Reply", depth=100,
                                          transient_local=False, type_support=rep_ts.address)
        except Exception:
            self._writer.close()
            raise
        self.client_id = random.getrandbits(63) | 1
        self._seq = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self.last_used = time.monotonic()
        self.stray_replies = 0
        self._ready_at: float | None = None  # monotonic: when requests may go (matched + settle)

    def service_is_ready(self, now: float | None = None) -> bool:
        """The request writer matched a server's reader and the reply reader its writer, for
        MATCH_SETTLE_S: the server's side matches our writer about when ours matched its
        reader, and a request sent before it did is dropped by the server's reader."""
        now = time.monotonic() if now is None else now
        if self._ready_at is not None:
            return now >= self._ready_at
        if self._writer.matched() > 0 and self._reader.matched() > 0:
            self._ready_at = now + MATCH_SETTLE_S
        return False

    async def call(self, request: Any, deadline: float, clock: Any = time.monotonic) -> Any:
        """The response, or asyncio.TimeoutError at `deadline` (on `clock`)."""
        self._seq += 1
        seq = self._seq
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[seq] = fut
        self.last_used = time.monotonic()
        try:
            self._writer.publish(encode_request(serialize_message(request), self.client_id,
                                                seq))
            delay = POLL_MIN_S
            while not fut.done():
                self._take()
                if fut.done():
                    break
                left = deadline - clock()
                if left <= 0:
                    raise asyncio.TimeoutError()
                await asyncio.sleep(min(delay, left))
                delay = min(delay * 2, POLL_MAX_S)
            return fut.result()
        finally:
            self._pending.pop(seq, None)

    def _take(self) -> None:
        for sample in self._reader.take():
            try:
                client_id, seq, cdr = decode_reply(sample)
            except ValueError as exc:
                self.stray_replies += 1
                log.debug("%s: %s", self.name, exc)
                continue
            fut = self._pending.get(seq) if client_id == self.client_id else None
            if fut is None or fut.done():
                continue  # another client's reply, or one given up on
            try:
                fut.set_result(deserialize_message(cdr, self.srv_cls.Response))
            except Exception as exc:
                fut.set_exception(exc)

    def close(self) -> None:
        """Destroy the raw writer and reader (idempotent)."""
        self._writer.close()
        self._reader.close()
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(ConnectionError("the client was closed"))

    @property
    def pending(self) -> int:
        """Calls waiting for their reply."""
        return len(self._pending)
