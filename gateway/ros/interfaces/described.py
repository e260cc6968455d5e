"""Reading topics of types the gateway lacks, from the type descriptions nodes serve (REP-2011).

Jazzy and newer nodes answer `~/get_type_description` with the `.msg` sources of a type and its
dependencies; the compiled converter reads CDR from such definitions. To receive the samples
the gateway needs a reader whose DDS type name is the remote one: the rmw only uses a
typesupport's names and hash for a reader that takes serialized data, so a compiled
typesupport (std_msgs/String's) is borrowed with the type's own names and hash
(`BorrowedTypeSupport`); its (de)serializers are never called. Writes encode JSON to CDR
(described_encode.py) for a raw writer; service calls build the package (callbuild.py).
A description is data from the network: it must hash to the type hash the graph announces,
its definition is rendered from its checked structured fields (typebuild.msg_body), and the
converter and encoder refuse recursive types and types past the `ros.type_limits` caps
(_fast/typegraph.py); encoding runs off the event loop within its time budget.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ..._fast import converter_for_definition, typegraph
from ...process.waits import within
from ..dds._rawtopic import RawTopicReader, RawTopicWriter, _libs, message_type_support
from ..topics.pool import BEST_EFFORT_SETTLE_S, PUBLISH_MATCH_POLL_S, PUBLISH_MATCH_WAIT_S
from .described_encode import Encoder
from .typebuild import BuildError, check_hash, description_types, msg_body, split_type

log = logging.getLogger(__name__)

SECTION = "\n" + "=" * 80 + "\nMSG: {name}\n"
FETCH_TIMEOUT_S = 2.0
FETCH_ATTEMPTS = 3
RETRY_FAILED_AFTER_S = 30.0
MAX_READERS = 16
MAX_WRITERS = 16
TAKE_POLL_S = 0.02
OFFLOOP_BYTES = 64 * 1024  # samples converted off the event loop above this size


async def ask_description(bridge: Any, client: Any, request: Any, fqn: str,
                          timeout_s: float) -> Any:
    """A node's successful GetTypeDescription answer; TimeoutError, or LookupError with the
    node's reason."""
    response = None
    for _ in range(FETCH_ATTEMPTS):  # a first request can go before the reply matches
        future = client.call_async(request)
        try:
            response = await within(bridge.wrap_future(future), timeout_s)
            break
        except asyncio.TimeoutError:
            client.remove_pending_request(future)
    if response is None:
        raise TimeoutError(f"{fqn} did not answer get_type_description")
    if not response.successful:
        raise LookupError(f"{fqn}: {response.failure_reason or 'no description'}")
    return response


class _TypeSupport(ctypes.Structure):
    """rosidl_message_type_support_t."""

    _fields_ = [("typesupport_identifier", ctypes.c_char_p), ("data", ctypes.c_void_p),
                ("func", ctypes.c_void_p), ("get_type_hash_func", ctypes.c_void_p),
                ("get_type_description_func", ctypes.c_void_p),
                ("get_type_description_sources_func", ctypes.c_void_p)]


_HANDLE_FN = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)
_HASH_FN = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)
_FASTRTPS_C = b"rosidl_typesupport_fastrtps_c"
_CALLBACKS_BYTES = 64  # message_type_support_callbacks_t: names, then function pointers


def parse_hash(text: str) -> bytes:
    """rosidl_type_hash_t bytes (version, 32-byte value) of `RIHS01_<hex>`."""
    version, _, value = text.partition("_")
    raw = bytes.fromhex(value)
    if not version.startswith("RIHS") or len(raw) != 32:
        raise ValueError(f"not a type hash: {text!r}")
    return bytes([int(version[4:])]) + raw


class BorrowedTypeSupport:
    """A fastrtps_c typesupport named `pkg/msg/Type` with its hash, borrowed from a compiled
    one; only good for readers that take serialized samples."""

    def __init__(self, type_name: str, type_hash: str) -> None:
        from std_msgs.msg import String  # noqa: PLC0415 - ROS types load on first use

        pkg, kind, name = type_name.split("/")
        base = _TypeSupport.from_address(message_type_support(String))
        fast = _HANDLE_FN(base.func)(ctypes.addressof(base), _FASTRTPS_C)
        if not fast:
            raise RuntimeError("no rosidl_typesupport_fastrtps_c typesupport to borrow")
        borrowed = _TypeSupport.from_address(fast)
        self._callbacks = ctypes.create_string_buffer(
            ctypes.string_at(borrowed.data, _CALLBACKS_BYTES), _CALLBACKS_BYTES)
        self._namespace = ctypes.create_string_buffer(f"{pkg}::{kind}".encode())
        self._name = ctypes.create_string_buffer(name.encode())
        names = ctypes.cast(self._callbacks, ctypes.POINTER(ctypes.c_void_p))
        names[0], names[1] = ctypes.addressof(self._namespace), ctypes.addressof(self._name)
        self._hash = ctypes.create_string_buffer(parse_hash(type_hash), 40)
        self._hash_fn = _HASH_FN(lambda _ts: ctypes.addressof(self._hash))
        runtime = ctypes.CDLL("librosidl_runtime_c.so")
        self._ts = _TypeSupport(
            typesupport_identifier=_FASTRTPS_C, data=ctypes.addressof(self._callbacks),
            func=ctypes.cast(runtime.get_message_typesupport_handle_function,
                             ctypes.c_void_p).value,
            get_type_hash_func=ctypes.cast(self._hash_fn, ctypes.c_void_p).value)
        _libs()

    @property
    def address(self) -> int:
        """The rosidl_message_type_support_t to hand to the rmw."""
        return ctypes.addressof(self._ts)


_BORROWED: dict[tuple[str, str], BorrowedTypeSupport] = {}


@dataclass
class Description:
    """A type as a node described it: hash, .msg definition (rosbag2 style) and converter."""

    type_name: str
    type_hash: str
    node: str
    definition: str
    converter: Any
    encoder: Encoder | None = None


def definition_text(type_name: str, sources: list[tuple[str, str, str]]) -> str:
    """The rosbag2-style definition (root, then `MSG: pkg/msg/T` parts) of (name, encoding,
    text) sources; ValueError when the root or a part is not `.msg` text."""
    by_name = {name: (encoding, text) for name, encoding, text in sources}
    if type_name not in by_name:
        raise ValueError(f"the node served no source for {type_name}")
    bad = sorted(n for n, (enc, _) in by_name.items() if enc != "msg")
    if bad:
        raise ValueError(f"sources not in .msg form: {', '.join(bad)}")
    parts = [by_name[type_name][1]]
    parts += [SECTION.format(name=n) + t for n, (_, t) in sorted(by_name.items())
              if n != type_name]
    return "".join(parts)


def definition_of(description: Any, type_name: str, type_hash: str) -> str:
    """The rosbag2-style definition of a TypeDescription, rendered from its structured fields
    (names, types and bounds checked) after its hash was checked against `type_hash`;
    ValueError (BuildError) otherwise."""
    check_hash(description, type_hash)
    types = description_types(description)
    if type_name not in types:
        raise BuildError(f"the node described {description.type_description.type_name}, "
                         f"not {type_name}")
    for name in types:
        if split_type(name)[1] != "msg":
            raise BuildError(f"{name} is not a message type")
    return definition_text(type_name, [(n, "msg", msg_body(f)) for n, f in types.items()])


@dataclass
class _Reader:
    reader: RawTopicReader
    converter: Any
    newest: bytes | None = None
    received_ns: int = 0


class DescribedTypes:
    """Descriptions fetched from the nodes (one fetch per type) and raw readers per topic."""

    def __init__(self, bridge: Any) -> None:
        self.bridge = bridge
        self._descriptions: dict[str, Description] = {}
        self._failed: dict[str, tuple[float, str]] = {}
        self._fetching: dict[str, asyncio.Task[None]] = {}
        self._readers: OrderedDict[str, _Reader] = OrderedDict()
        self._writers: dict[str, tuple[str, RawTopicWriter, float]] = {}
        self._lock = threading.Lock()

    def state(self, type_name: str) -> tuple[str, str]:
        """("ready" | "fetching" | "failed" | "unknown", reason)."""
        if type_name in self._descriptions:
            return "ready", ""
        if type_name in self._fetching:
            return "fetching", ""
        failed = self._failed.get(type_name)
        if failed is not None and time.monotonic() - failed[0] < RETRY_FAILED_AFTER_S:
            return "failed", failed[1]
        return "unknown", ""

    def start_fetch(self, type_name: str, topic: str) -> None:
        """Fetch the type's description from a node on `topic` (in the background)."""
        if type_name in self._fetching or type_name in self._descriptions:
            return
        task = asyncio.get_running_loop().create_task(self._fetch(type_name, topic))
        self._fetching[type_name] = task

    async def ensure(self, type_name: str, topic: str, timeout: float) -> tuple[str, str]:
        """Fetch the description if needed, waiting up to `timeout`; state() after."""
        if self.state(type_name)[0] == "unknown":
            self.start_fetch(type_name, topic)
        if self.state(type_name)[0] == "fetching":
            await self.wait(type_name, timeout)
        return self.state(type_name)

    async def wait(self, type_name: str, timeout: float) -> None:
        """Wait up to `timeout` for a running fetch of the type to end."""
        task = self._fetching.get(type_name)
        if task is not None:
            await asyncio.wait([task], timeout=timeout)

    async def _fetch(self, type_name: str, topic: str) -> None:
        try:
            self._descriptions[type_name] = await self._describe(type_name, topic)
            self._failed.pop(type_name, None)
            log.info("type %s: read from the description served by %s", type_name,
                     self._descriptions[type_name].node)
        except Exception as exc:  # every failure is answered as 501 with its reason
            self._failed[type_name] = (time.monotonic(), str(exc))
            log.warning("type %s: no description (%s)", type_name, exc)
        finally:
            self._fetching.pop(type_name, None)

    async def _describe(self, type_name: str, topic: str) -> Description:
        from type_description_interfaces.srv import (  # noqa: PLC0415 - ROS types load on first use
            GetTypeDescription,
        )

        node = self.bridge.node
        infos = await self.bridge.run(node.get_publishers_info_by_topic, topic)
        infos += await self.bridge.run(node.get_subscriptions_info_by_topic, topic)
        owners = [i for i in infos if i.topic_type == type_name and i.node_name != node.get_name()
                  and not i.node_name.startswith("_NODE_NAME_UNKNOWN_")]
        if not owners:
            raise LookupError(f"no node on {topic} to describe {type_name}")
        info = owners[0]
        fqn = info.node_namespace.rstrip("/") + "/" + info.node_name
        type_hash = str(info.topic_type_hash)
        client = await self.bridge.run(node.create_client, GetTypeDescription,
                                       fqn + "/get_type_description")
        try:
            request = GetTypeDescription.Request(type_name=type_name, type_hash=type_hash,
                                                 include_type_sources=False)
            response = await ask_description(self.bridge, client, request, fqn,
                                             FETCH_TIMEOUT_S)
            definition = definition_of(response.type_description, type_name, type_hash)
            converter = converter_for_definition(type_name, definition)
        finally:
            await self.bridge.run(node.destroy_client, client)
        return Description(type_name, type_hash, fqn, definition, converter)

    async def latest(self, topic: str, type_name: str, timeout: float
                     ) -> tuple[bytes | None, int]:
        """(JSON of the newest sample or None, receive time ns), waiting up to `timeout` for
        a first one."""
        desc = self._descriptions[type_name]
        entry = self._readers.get(topic)
        if entry is None or entry.converter is not desc.converter:
            entry = await self._open(topic, desc)
        self._readers.move_to_end(topic)
        deadline = time.monotonic() + timeout
        while True:
            for sample in entry.reader.take():
                entry.newest, entry.received_ns = sample, time.time_ns()
            if entry.newest is not None or time.monotonic() >= deadline:
                break
            await asyncio.sleep(TAKE_POLL_S)
        if entry.newest is None:
            return None, 0
        sample, limit = entry.newest, typegraph.LIMITS.max_read_bytes
        if len(sample) > limit:
            raise ValueError(f"a sample of {len(sample)} bytes is larger than {limit} "
                             "(setting ros.type_limits.max_read_bytes)")
        if len(sample) > OFFLOOP_BYTES:
            js = await asyncio.get_running_loop().run_in_executor(
                None, entry.converter.to_json, sample)
        else:
            js = entry.converter.to_json(sample)
        return js, entry.received_ns

    async def _open(self, topic: str, desc: Description) -> _Reader:
        node = self.bridge.node
        pubs = await self.bridge.run(node.get_publishers_info_by_topic, topic)
        reliable = bool(pubs) and all(p.qos_profile.reliability == 1 for p in pubs)
        latched = bool(pubs) and all(p.qos_profile.durability == 1 for p in pubs)

        def make() -> RawTopicReader:
            key = (desc.type_name, desc.type_hash)
            ts = _BORROWED.get(key)
            if ts is None:
                # Kept for the process: Fast DDS keeps a registered type (and the callbacks it
                # points to) while any reader of that type name lives.
                ts = _BORROWED[key] = BorrowedTypeSupport(desc.type_name, desc.type_hash)
            return RawTopicReader(node, None, "rt" + topic, depth=1, reliable=reliable,
                                  transient_local=latched, type_support=ts.address)

        reader = await self.bridge.run(make, what=f"reading {topic} by its description")
        with self._lock:
            old = self._readers.pop(topic, None)
            self._readers[topic] = entry = _Reader(reader, desc.converter)
            dropped = [old] if old else []
            while len(self._readers) > MAX_READERS:
                dropped.append(self._readers.popitem(last=False)[1])
        for gone in dropped:
            gone.reader.close()
        return entry

    async def publish(self, topic: str, type_name: str, fields: Any) -> int:
        """Encode `fields` (MessageFieldError when they do not fit) and publish them; the
        subscriptions (other than the gateway's own) the writer has matched."""
        desc = self._descriptions[type_name]
        loop = asyncio.get_running_loop()
        if desc.encoder is None:
            desc.encoder = await loop.run_in_executor(None, Encoder, type_name, desc.definition)
        # Off the event loop; the encoder stops itself at its byte and time budget.
        cdr = await loop.run_in_executor(None, desc.encoder.encode, fields)
        node = self.bridge.node
        current = self._writers.get(topic)
        if current is None or current[0] != type_name:
            key = (desc.type_name, desc.type_hash)

            def make() -> RawTopicWriter:
                ts = _BORROWED.get(key)
                if ts is None:
                    ts = _BORROWED[key] = BorrowedTypeSupport(desc.type_name, desc.type_hash)
                return RawTopicWriter(node, None, "rt" + topic, depth=10,
                                      transient_local=False, type_support=ts.address)

            writer = await self.bridge.run(make, what=f"writing {topic} by its description")
            if current is not None:
                current[1].close()
            self._writers.pop(topic, None)
            while len(self._writers) >= MAX_WRITERS:  # the oldest writer goes first
                self._writers.pop(next(iter(self._writers)))[1].close()
            self._writers[topic] = current = (type_name, writer, time.monotonic())
        _, writer, born = current
        deadline = born + PUBLISH_MATCH_WAIT_S
        if time.monotonic() < deadline:
            subs = await self.bridge.run(node.get_subscriptions_info_by_topic, topic)
            while writer.matched() < len(subs) and time.monotonic() < deadline:
                await asyncio.sleep(PUBLISH_MATCH_POLL_S)
            if any(i.qos_profile.reliability == 2 for i in subs):  # best effort
                await asyncio.sleep(max(0.0, min(BEST_EFFORT_SETTLE_S,
                                                 deadline - time.monotonic())))
        await self.bridge.run(writer.publish, cdr, what=f"writing {topic}")
        own = 1 if topic in self._readers else 0
        return max(writer.matched() - own, 0)

    def close(self) -> None:
        """Destroy every reader and writer."""
        with self._lock:
            readers, self._readers = list(self._readers.values()), OrderedDict()
            writers, self._writers = list(self._writers.values()), {}
        for entry in readers:
            entry.reader.close()
        for _, writer, _ in writers:
            writer.close()
        for task in self._fetching.values():
            task.cancel()
