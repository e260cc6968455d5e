"""A simulated robot gateway: a real robot's captured answers with its own ids, its fault
stream (numbered events, a replay ring, Last-Event-ID resume) and its beacon.

The answers come from bench/_sim_templates.json (bench/_sim_capture.py: a robot gateway on
the demo robot's lidar_sensor). Per robot, the host component (`vm` when captured) takes the
robot's name, as each real robot's host does; the app (`lidar_sensor`) and function
(`perception`) keep their ids, as on a fleet of identical robots, so the primary renames the
colliding apps (`r7__lidar_sensor`) and merges the function over every robot. Faults raised
on command (`SimRobot.raise_fault`) go into the fault lists and onto the fault stream, framed
by the gateway's own code (gateway/faults/stream.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import time
from collections import deque
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from gateway.faults.stream import chunk, frame, refetch_frame
from gateway.federation.wire import etag as entities_etag

TEMPLATES = Path(__file__).with_name("_sim_templates.json")
API = "/api/v1"
CAPTURED_HOST = "vm"  # the capture machine's host component id
APP = "lidar_sensor"
REPLAY_EVENTS = 100  # as the robot gateway (gateway/faults/stream.py)
MAX_STREAMS = 10  # SSE streams one robot serves (sse.max_clients on a robot of the lab)
MAX_HEAD_BYTES = 64 * 1024
REPORT_AGAIN_S = 2.0  # the demo lidar's check period
FAULT_PATHS = ("/faults", f"/apps/{APP}/faults", "/components/{host}/faults",
               "/functions/perception/faults")
REASONS = {200: "OK", 204: "No Content", 206: "Partial Content", 304: "Not Modified",
           400: "Bad Request", 404: "Not Found", 416: "Range Not Satisfiable",
           503: "Service Unavailable"}
SSE_HEAD = (b"Content-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
            b"Connection: keep-alive\r\nX-Accel-Buffering: no\r\n")


def robot_address(index: int) -> str:
    """The loopback address of robot `index` (Linux routes all of 127/8 to lo)."""
    if not 0 <= index < 250 * 250:
        raise ValueError(f"robot index {index} out of range")
    return f"127.77.{index // 250}.{index % 250 + 2}"


def pct(xs: list[float], q: float) -> float:
    """The q-quantile of xs (nan when empty)."""
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def iso_ms(t: float) -> str:
    """A wall time as the gateway writes it: ISO 8601, milliseconds, Z."""
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def parse_head(buf: bytes | bytearray) -> tuple[str, str, str, dict[str, str], int] | None:
    """(method, path, query, lower-cased headers, head length) of the request head at the start
    of buf; None while the head is incomplete. ValueError for a malformed head."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        if len(buf) > MAX_HEAD_BYTES:
            raise ValueError("request head too large")
        return None
    lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise ValueError(f"bad request line {lines[0]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        key, sep, value = line.partition(":")
        if not sep:
            raise ValueError(f"bad header line {line!r}")
        headers[key.strip().lower()] = value.strip()
    path, _, query = parts[1].partition("?")
    return parts[0], unquote(path), query, headers, end + 4


def parse_range(value: str | None, size: int) -> tuple[int, int] | None:
    """(first, last) byte of a single `bytes=` range within size; None for no range.
    ValueError when it cannot be satisfied."""
    if not value:
        return None
    unit, _, spec = value.partition("=")
    if unit.strip() != "bytes" or "," in spec:
        raise ValueError("unsupported range")
    first_s, _, last_s = spec.strip().partition("-")
    if not first_s:  # a suffix: the last N bytes
        n = int(last_s)
        if n <= 0:
            raise ValueError("empty suffix")
        return max(0, size - n), size - 1
    first = int(first_s)
    last = min(int(last_s), size - 1) if last_s else size - 1
    if first >= size or last < first:
        raise ValueError("range outside the body")
    return first, last


def answer(status: int, body: bytes = b"", content_type: str | None = "application/json",
           extra: bytes = b"") -> bytes:
    """One complete HTTP/1.1 answer with Content-Length."""
    head = b"HTTP/1.1 %d %s\r\n" % (status, REASONS.get(status, "OK").encode())
    if content_type and (body or status not in (204, 304)):
        head += b"Content-Type: %s\r\n" % content_type.encode()
    if status not in (204, 304):
        head += b"Content-Length: %d\r\n" % len(body)
    return head + extra + b"\r\n" + body


def error_body(status: int, code: str, message: str) -> bytes:
    """The spec's error body."""
    return json.dumps({"error_code": code, "message": message,
                       "parameters": {"status": status}}).encode()


class EventRing:
    """A robot's fault stream: numbered frames, the last REPLAY_EVENTS kept for resume."""

    def __init__(self, start_id: int = 0) -> None:
        self.start_id = start_id  # ids up to it are an earlier process's
        self.last_id = start_id
        self.ring: deque[tuple[int, bytes]] = deque(maxlen=REPLAY_EVENTS)

    def publish(self, event: str, data: Any) -> bytes:
        """Number and keep an event; its frame."""
        self.last_id += 1
        raw = frame(self.last_id, event, data)
        self.ring.append((self.last_id, raw))
        return raw

    def replay(self, last_event_id: int | None) -> list[bytes]:
        """Frames after last_event_id, a refetch first when some are gone (as the gateway)."""
        if last_event_id is None:
            return []
        oldest = self.ring[0][0] if self.ring else self.last_id + 1
        frames = [raw for i, raw in self.ring if i > last_event_id]
        if (last_event_id < oldest - 1 or last_event_id > self.last_id
                or last_event_id < self.start_id):
            frames.insert(0, refetch_frame(last_event_id, oldest, self.last_id, self.start_id))
        return frames


def _load_templates(path: Path = TEMPLATES) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


class Templates:
    """The captured answers, rendered per robot."""

    _cache: dict[str, Any] | None = None

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        if data is None:
            if Templates._cache is None:
                Templates._cache = _load_templates()
            data = Templates._cache
        self.data = data
        frames = {}
        for raw in data["stream"]["frames"]:
            block = raw.split("\r\n")[-1]
            fields = dict(line.split(": ", 1) for line in block.split("\n") if ": " in line)
            if "event" in fields:
                frames.setdefault(fields["event"], json.loads(fields["data"]))
        self.events: dict[str, dict[str, Any]] = frames

    def answers(self, host: str) -> dict[str, tuple[int, Any]]:
        """path -> (status, JSON body) for a robot whose host component is `host`."""
        out: dict[str, tuple[int, Any]] = {}
        for key, value in self.data["answers"].items():
            if " " in key:
                continue
            path = key.replace(f"/components/{CAPTURED_HOST}/", f"/components/{host}/")
            body = json.loads(json.dumps(value["body"]).replace(
                f'"{CAPTURED_HOST}"', json.dumps(host)))
            out[path] = (value["status"], body)
        return out

    def event(self, kind: str, fault: dict[str, Any], t: float) -> dict[str, Any]:
        """A fault event of `kind` (fault_confirmed, fault_cleared) about `fault`, at t."""
        data = copy.deepcopy(self.events[kind])
        data["fault"] = fault
        data["timestamp"] = iso_ms(t)
        return data


def fault_like(template: dict[str, Any], code: str, t: float, status: str = "CONFIRMED"
               ) -> dict[str, Any]:
    """A fault item shaped as `template` (a captured item) with its own code and times."""
    item = copy.deepcopy(template)
    stamp = iso_ms(t)
    item.update(fault_code=code, message=f"simulated fault {code}",
                description=f"simulated fault {code}", timestamp=stamp, first_occurred=t,
                last_occurred=t, occurrence_count=1, status=status)
    vendor = item.get("x-vendor")
    if isinstance(vendor, dict):
        vendor.update(status=status, occurrence_count=1, first_occurrence=stamp,
                      last_occurrence=stamp)
    return item


class SimRobot:
    """One simulated robot: its answers, faults, fault stream clients and beacons."""

    def __init__(self, name: str, index: int, templates: Templates, rec_bytes: int,
                 boot: int | None = None) -> None:
        self.name, self.index = name, index
        self.address = robot_address(index)
        self.templates = templates
        self.boot = boot if boot is not None else time.time_ns() + index
        self.generation = 3
        self.etag = entities_etag(self.boot, self.generation)
        self.plain = templates.answers(name)
        ent = self.plain["/x-vendor-entities"][1]
        ent["gateway"] = name
        self.entities_body = json.dumps(ent).encode()
        self.beacon_line = chunk(b"data: %b\n\n" % self.etag.encode())
        health = self.plain["/health"][1]
        self.health_head, self.health_tail = self._split_timestamp(health)
        self.faults: dict[str, dict[str, Any]] = {}  # path -> template item (first captured)
        self.captured: dict[str, dict[str, dict[str, Any]]] = {}  # path -> code -> item
        self.active: dict[str, float] = {}  # code -> raised at (wall)
        for path in FAULT_PATHS:
            p = path.format(host=name)
            items = self.plain[p][1]["items"]
            self.faults[p] = items[0]
            self.captured[p] = {item["fault_code"]: item for item in items}
            for item in items:
                self.active.setdefault(item["fault_code"], item["first_occurred"])
        self.ring = EventRing()
        self.streams: set[asyncio.Transport] = set()
        self.beacons: set[asyncio.Transport] = set()
        self.bodies: dict[str, bytes] = {}
        self._render()
        rec = self.plain[f"/apps/{APP}/bulk-data/rosbags"][1]["items"][0]
        rec["size"] = rec_bytes
        self.recording_id = rec["id"]
        self.recording = bytes(range(256)) * (rec_bytes // 256) + bytes(rec_bytes % 256)
        self.bodies[f"/apps/{APP}/bulk-data/rosbags"] = answer(200, json.dumps(
            self.plain[f"/apps/{APP}/bulk-data/rosbags"][1]).encode())

    @staticmethod
    def _split_timestamp(body: dict[str, Any]) -> tuple[bytes, bytes]:
        raw = json.dumps({**body, "timestamp": 0}).encode()
        head, _, tail = raw.partition(b'"timestamp": 0')
        return head + b'"timestamp": ', tail

    def _render(self) -> None:
        """The prebuilt answers of every plain read (after each fault change)."""
        for path, (status, body) in self.plain.items():
            if path in ("/health", "/x-vendor-entities"):
                continue
            if path in self.faults:
                body = dict(body)
                kept = self.captured[path]
                body["items"] = [kept[code] if code in kept else
                                 fault_like(self.faults[path], code, t)
                                 for code, t in self.active.items()]
            self.bodies[path] = answer(status, json.dumps(body).encode())

    def health(self) -> bytes:
        return answer(200, self.health_head + str(time.time_ns()).encode() + self.health_tail)

    def entities(self, if_none_match: str | None) -> bytes:
        extra = b"ETag: %b\r\nCache-Control: no-cache\r\n" % self.etag.encode()
        if if_none_match == self.etag:
            return answer(304, extra=extra, content_type=None)
        return answer(200, self.entities_body, extra=extra)

    def _publish(self, event: str, data: dict[str, Any]) -> None:
        raw = chunk(self.ring.publish(event, data))
        for t in list(self.streams):
            if t.is_closing():
                self.streams.discard(t)
            else:
                t.write(raw)

    def raise_fault(self, code: str, now: Callable[[], float] = time.time) -> float:
        """Raise a fault (confirmed at once); the event's wall time."""
        t = now()
        self.active[code] = t
        self._render()
        fault = fault_like(self.faults[f"/apps/{APP}/faults"], code, t)
        self._publish("fault_confirmed", self.templates.event("fault_confirmed", fault, t))
        return t

    def clear_fault(self, code: str, now: Callable[[], float] = time.time) -> bool:
        """Clear an active fault (its fault_cleared event); False when it is not active."""
        first = self.active.pop(code, None)
        if first is None:
            return False
        t = now()
        self._render()
        fault = fault_like(self.faults[f"/apps/{APP}/faults"], code, first, "CLEARED")
        fault["x-vendor"]["cleared_at"] = iso_ms(t)
        self._publish("fault_cleared", self.templates.event("fault_cleared", fault, t))
        if code in self.captured[f"/apps/{APP}/faults"]:
            # the demo lidar reports its faults again every 2 s: a cleared one comes back
            with contextlib.suppress(RuntimeError):
                asyncio.get_running_loop().call_later(REPORT_AGAIN_S, self._report_again, code)
        return True

    def _report_again(self, code: str) -> None:
        if code not in self.active:
            self.raise_fault(code)

    def download(self, rec_id: str, range_header: str | None) -> bytes:
        """A recording's bytes (206 for a Range), as the robot's bulk-data route."""
        if rec_id != self.recording_id:
            return answer(404, error_body(404, "resource-not-found", f"no recording {rec_id}"))
        size = len(self.recording)
        extra = (b"Accept-Ranges: bytes\r\nContent-Disposition: attachment; "
                 b"filename=\"%b.mcap\"\r\n" % rec_id.encode())
        try:
            span = parse_range(range_header, size)
        except ValueError:
            return answer(416, error_body(416, "invalid-request", "range not satisfiable"),
                          extra=b"Content-Range: bytes */%d\r\n" % size)
        if span is None:
            return answer(200, self.recording, "application/x-mcap", extra)
        first, last = span
        extra += b"Content-Range: bytes %d-%d/%d\r\n" % (first, last, size)
        return answer(206, self.recording[first:last + 1], "application/x-mcap", extra)

    def open_stream(self, transport: asyncio.Transport, last_event_id: str | None) -> bytes:
        """The fault stream's head and first chunk for a new client (its replay)."""
        if len(self.streams) >= MAX_STREAMS:
            return answer(503, error_body(503, "service-unavailable", "Too many SSE clients"))
        try:
            last = int(last_event_id.strip()) if last_event_id is not None else None
        except ValueError:
            last = None
        backlog = self.ring.replay(last)
        self.streams.add(transport)
        head = (b"HTTP/1.1 200 OK\r\n" + SSE_HEAD
                + b"X-Vendor-Last-Event-Id: %d\r\nTransfer-Encoding: chunked\r\n\r\n"
                % self.ring.last_id)
        return head + chunk(b"".join([b":connected\n\n", *backlog]))

    def open_beacon(self, transport: asyncio.Transport) -> bytes:
        self.beacons.add(transport)
        return (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
                + chunk(b": beacon\n\n"))

    def respond(self, method: str, path: str, headers: dict[str, str],
                transport: asyncio.Transport) -> tuple[bytes, bool]:
        """(bytes to write, whether the connection stays a stream) for one request."""
        if not path.startswith(API):
            return answer(404, error_body(404, "resource-not-found", path)), False
        sub = path[len(API):]
        if method == "GET":
            if sub == "/health":
                return self.health(), False
            if sub == "/x-vendor-entities":
                return self.entities(headers.get("if-none-match")), False
            if sub == "/x-vendor-beacon":
                return self.open_beacon(transport), True
            if sub == "/faults/stream":
                out = self.open_stream(transport, headers.get("last-event-id"))
                return out, out.startswith(b"HTTP/1.1 200")
            body = self.bodies.get(sub)
            if body is not None:
                return body, False
            prefix = f"/apps/{APP}/bulk-data/rosbags/"
            if sub.startswith(prefix):
                return self.download(sub[len(prefix):], headers.get("range")), False
        elif method == "DELETE" and sub.startswith(f"/apps/{APP}/faults/"):
            code = sub.rsplit("/", 1)[1]
            if self.clear_fault(code):
                return answer(204, content_type=None), False
            return answer(404, error_body(404, "resource-not-found",
                                          f"Fault '{code}' not found")), False
        return answer(404, error_body(404, "resource-not-found",
                                      f"{method} {sub} is not simulated")), False


class RobotHttp(asyncio.Protocol):
    """One HTTP/1.1 connection to a simulated robot (keep-alive; streams stay open)."""

    def __init__(self, robot: SimRobot) -> None:
        self.robot = robot
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None
        self.streaming = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self.streaming:
            return  # a stream client sends nothing more that matters
        self.buf += data
        t = self.transport
        assert t is not None
        while self.buf:
            try:
                parsed = parse_head(self.buf)
            except ValueError:
                t.write(answer(400, error_body(400, "invalid-request", "bad request")))
                t.close()
                return
            if parsed is None:
                return
            method, path, _query, headers, n = parsed
            need = n + int(headers.get("content-length", "0") or 0)
            if len(self.buf) < need:
                return
            del self.buf[:need]
            out, stream = self.robot.respond(method, path, headers, t)
            t.write(out)
            if stream:
                self.streaming = True
                return
            if headers.get("connection", "").lower() == "close":
                t.close()
                return

    def connection_lost(self, exc: Exception | None) -> None:
        if self.transport is not None:
            self.robot.streams.discard(self.transport)
            self.robot.beacons.discard(self.transport)
