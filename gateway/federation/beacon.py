"""The peer beacon: one long-lived stream that keeps an idle peer's liveness and entity ETag
current at a few bytes per interval, instead of a /health and a refresh request.

Peer side (`GET /x-vendor-beacon?interval_ms=N`, server-sent events): every interval one event
`data: <etag>`, the ETag of `/x-vendor-entities` (a change is pushed within an interval). A
request costs a robot's gateway a pass through its HTTP stack; a beacon line a timer and a write.

Primary side (`BeaconReader`, one per online peer): a line read proves the peer alive. No line
within interval + the peer's probe budget (PROBE_BUDGET_S, more on a slow link: health.py; a
stopped peer) counts as a probe that timed out; a closed
stream (a killed peer) wakes the probe loop, which probes /health at once: offline detection
is what the probes give. While the beacon is fresh the probe loop skips
its /health request (a full one still goes every FULL_PROBE_S, which also sees a degraded
peer, unless another request of the primary was answered by the peer's HTTP stack within
FULL_PROBE_S: a fleet under live reads sends no /health to hold a robot's pooled connection
while a read wants it) and asks `/x-vendor-entities` only when the beacon's ETag differs
from the one held.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

import aiohttp
from aiohttp import web

from ..errors import invalid_parameter, vendor_error
from ..http.state import state_of
from .health import PROBE_BUDGET_S
from .sites import declared
from .wire import etag

log = logging.getLogger(__name__)

MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 10000
MAX_UNREAD_BYTES = 64 * 1024
MAX_BEACONS = 32  # streams one gateway serves at once (one per primary)
FULL_PROBE_S = 10.0  # a fresh beacon still lets one /health probe through this often
RETRY_SILENT_S = 60.0  # a beacon that never sent a line is tried again after this
_OPEN = [0]  # beacons this process serves now (one gateway per process)


async def beacon_stream(request: web.Request) -> web.StreamResponse:
    """The beacon: `data: <entities ETag>` every interval_ms (100-10000; default 500)."""
    state = state_of(request)
    raw = request.query.get("interval_ms", "500")
    if not raw.isdigit() or not MIN_INTERVAL_MS <= int(raw) <= MAX_INTERVAL_MS:
        raise invalid_parameter(f"interval_ms must be an integer from {MIN_INTERVAL_MS} to "
                                f"{MAX_INTERVAL_MS}", interval_ms=raw)
    interval = int(raw) / 1000.0
    count = _OPEN[0]
    if count >= MAX_BEACONS:
        raise vendor_error(503, "x-vendor-beacons-exhausted",
                           f"{MAX_BEACONS} beacons are open (one per primary); retry later",
                           open=count)
    _OPEN[0] += 1
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "Cache-Control": "no-cache"})
    try:
        chunked = request.version >= (1, 1)  # HTTP/1.0: the body runs to the close
        if chunked:
            response.enable_chunked_encoding()
        await response.prepare(request)
        await response.write(b": beacon\n\n")  # the headers and the first chunk go out
        transport = request.transport
        started = state.started_ns
        loop = asyncio.get_running_loop()
        due = loop.time()
        while transport is not None and not transport.is_closing():
            # One chunk of the chunked body straight to the socket: aiohttp's writer costs
            # more than the rest of the beacon, and twice a second on every idle robot.
            line = b"data: %b\n\n" % etag(started, declared(state)[1]).encode()
            transport.write(b"%x\r\n%b\r\n" % (len(line), line) if chunked else line)
            if transport.get_write_buffer_size() > MAX_UNREAD_BYTES:
                break  # the primary stopped reading: it will reopen the stream
            due += interval
            await asyncio.sleep(max(0.0, due - loop.time()))
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        _OPEN[0] -= 1
    return response


class BeaconReader:
    """The primary's end of one peer's beacon: fresh while lines arrive in time."""

    def __init__(self, session: aiohttp.ClientSession, url: str, headers: dict[str, str],
                 interval_s: float, connect_s: float, on_stale: Callable[[], None],
                 on_change: Callable[[], None],
                 slack_s: Callable[[], float] = lambda: PROBE_BUDGET_S) -> None:
        self.session, self.url, self.headers = session, url, headers
        self.interval_s, self.connect_s, self.slack_s = interval_s, connect_s, slack_s
        self.on_stale, self.on_change = on_stale, on_change
        self.etag: str | None = None
        self.last_line = float("-inf")  # time.monotonic() of the last line
        self.last_full = float("-inf")  # of the last full /health probe let through
        self.timed_out = False  # no line in time: the next probe reports a timeout
        self.unsupported = False  # the peer has no beacon route (an older gateway)
        self.retry_at = float("-inf")  # a stream that never gave a line is retried after this
        self.task: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None  # the stream's watchdog (_watch)
        self._silent = False  # the watchdog ended the read

    def fresh(self, now: float) -> bool:
        """True while the last line is within interval + slack (the peer's probe budget)."""
        return self.task is not None and not self.task.done() \
            and now - self.last_line <= self.interval_s + self.slack_s()

    def verdict(self) -> bool:
        """True once after the stream went silent past its budget (a probe's timeout)."""
        out, self.timed_out = self.timed_out, False
        return out

    def stands_in(self, now: float, answered: float = float("-inf")) -> bool:
        """True when the beacon may stand in for a /health probe now (`answered`: when the
        peer last answered another request, which stands in for a full probe)."""
        if not self.fresh(now):
            return False
        if now - max(self.last_full, answered) >= FULL_PROBE_S:
            self.last_full = now
            return False
        return True

    def quiet_s(self, now: float, answered: float = float("-inf")) -> float:
        """Seconds the probe loop may sleep now: until the next full probe while the beacon is
        fresh (the reader wakes the loop itself on a new ETag, a closed stream or a line
        missed past its budget: on_change, on_stale), else 0."""
        if not self.fresh(now):
            return 0.0
        return max(0.0, max(self.last_full, answered) + FULL_PROBE_S - now)

    def start(self) -> None:
        """Open the stream (again) unless it is open or the peer serves no beacon."""
        if self.unsupported or (self.task is not None and not self.task.done()) \
                or time.monotonic() < self.retry_at:
            return
        self.task = asyncio.get_running_loop().create_task(self._read())

    async def stop(self) -> None:
        """Close the stream."""
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task
            self.task = None

    def _watch(self, opened: float) -> None:
        """The stream's watchdog (one timer per budget, not one per line): cancels the read
        once no line came within interval + slack of the last one (or of the opening)."""
        task, loop = self.task, asyncio.get_running_loop()

        def check() -> None:
            if task is None or task.done() or self.task is not task:
                return
            due = max(self.last_line, opened) + self.interval_s + self.slack_s()
            left = due - time.monotonic()
            if left > 0:
                self._timer = loop.call_later(left, check)
                return
            self._silent = True
            task.cancel()

        self._timer = loop.call_later(self.interval_s + self.slack_s(), check)

    async def _read(self) -> None:
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self.connect_s,
                                        sock_read=None)
        self._silent = False
        self._watch(time.monotonic())
        try:
            async with self.session.get(self.url, headers=self.headers,
                                        timeout=timeout) as resp:
                if resp.status in (404, 405, 501):
                    self.unsupported = True
                    return
                if resp.status != 200:
                    return
                # Whole chunks, split here: a line per readline() with a timeout around it
                # cost two tasks and two timers per event, twice a second on every idle peer.
                rest = b""
                while True:
                    chunk = await resp.content.readany()
                    if not chunk:
                        return  # closed
                    *lines, rest = (rest + chunk).split(b"\n")
                    if len(rest) > MAX_UNREAD_BYTES:
                        return  # not a beacon
                    for line in lines:
                        if line.startswith(b"data: "):
                            self._line(line[6:].strip().decode())
        except asyncio.CancelledError:
            if not self._silent:
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()  # the watchdog's own cancel: the stream went silent
            self._went_silent()
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            log.debug("beacon %s: %r", self.url, exc)
        finally:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self.last_line = float("-inf")
            self.on_stale()

    def _line(self, tag: str) -> None:
        self.last_line = time.monotonic()
        if tag != self.etag:
            self.etag = tag
            self.on_change()

    def _went_silent(self) -> None:
        self.timed_out = self.last_line > float("-inf")
        if not self.timed_out:  # never a line (a buffering proxy?): the probes carry on
            self.retry_at = time.monotonic() + RETRY_SILENT_S
            log.info("beacon %s gave no line within %.1f s; probing /health instead",
                     self.url, self.interval_s + self.slack_s())
