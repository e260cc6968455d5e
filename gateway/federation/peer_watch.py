"""Shared upstreams of dashboard page watches on a primary: one SSE stream per robot.

A page stream watching a topic of a robot's app (directly or through a function or
component) needs that robot's frames. Instead of one subscription copy, and one of the
robot's `sse.max_clients` slots, per watch and per viewer, the primary reads one page stream
of each robot (`/x-<vendor>-page-stream?watch=...`) carrying every resource any of its pages
watches there; each resource's newest frame is one `Link` shared by all the watches of it.
The robot's stream is opened again (after a short pause that gathers changes) when the set
of resources changes; a resource nobody watches any more is kept for LINGER_S, so that a
page that reconnects (its watch list changed) does not make the robot stream churn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import aiohttp
import orjson

from .link import Link, next_chunk
from .relay import parse_frames

log = logging.getLogger(__name__)

MAX_WATCHES = 32  # a robot's page stream follows at most this many resources
SETTLE_S = 0.2  # changes within this pause share one reconnect
LINGER_S = 3.0  # an unwatched resource stays this long (a page's reconnect rejoins it)
RETRY_S = 0.5  # a refused or broken stream is opened again after this, doubling ...
RETRY_MAX_S = 8.0  # ... up to this


@dataclass(eq=False)
class _Upstream:
    """One robot's shared stream: its resources, their links and watchers."""

    peer: str
    links: dict[str, Link] = field(default_factory=dict)  # resource -> shared link
    owners: dict[str, set[Any]] = field(default_factory=dict)  # resource -> subscriptions
    idle: dict[str, float] = field(default_factory=dict)  # resource -> unwatched since
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    told: set[str] = field(default_factory=set)  # resources whose watchers heard a failure
    task: asyncio.Task[None] | None = None
    opened: int = 0  # streams opened (for /health)


class PeerWatches:
    """The shared upstreams of page-stream watches, one per peer."""

    def __init__(self, links: Any) -> None:
        self.links = links  # federation.push_links.PeerLinks (session, headers, engine)
        self.upstreams: dict[str, _Upstream] = {}

    def join(self, peer: str, resource: str, owner: Any, entity_path: str) -> Link:
        """The shared link of a robot's resource, watched by one more subscription."""
        up = self.upstreams.get(peer)
        if up is None:
            up = self.upstreams[peer] = _Upstream(peer)
        link = up.links.get(resource)
        if link is None:
            link = up.links[resource] = Link(peer, f"{entity_path} (shared page stream)")
            up.changed.set()
        up.owners.setdefault(resource, set()).add(owner)
        up.idle.pop(resource, None)
        if up.task is None or up.task.done():
            up.task = asyncio.ensure_future(self._run(up))
        return link

    def leave(self, peer: str, link: Link, owner: Any) -> None:
        """A subscription stopped watching; its resource lingers a moment when unwatched."""
        up = self.upstreams.get(peer)
        if up is None:
            return
        for resource, shared in up.links.items():
            if shared is link:
                owners = up.owners.get(resource, set())
                owners.discard(owner)
                if not owners:
                    up.idle[resource] = time.monotonic()
                return

    def streams(self) -> int:
        """Open upstreams (one per robot with watched resources)."""
        return sum(1 for up in self.upstreams.values() if up.task and not up.task.done())

    async def close(self) -> None:
        """Stop every upstream."""
        for up in self.upstreams.values():
            if up.task is not None:
                up.task.cancel()
        tasks = [up.task for up in self.upstreams.values() if up.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=2.0)
        self.upstreams.clear()

    def _expire(self, up: _Upstream) -> bool:
        """Drop resources unwatched for LINGER_S; True when any went."""
        now = time.monotonic()
        gone = [r for r, since in up.idle.items() if now - since >= LINGER_S]
        for resource in gone:
            del up.idle[resource]
            up.told.discard(resource)
            up.owners.pop(resource, None)
            link = up.links.pop(resource, None)
            if link is not None:
                link.set("ended")
        return bool(gone)

    async def _run(self, up: _Upstream) -> None:
        """Keep the robot's stream open with the current resources until none is left."""
        delay = RETRY_S
        try:
            while up.links:
                await asyncio.sleep(SETTLE_S)
                up.changed.clear()
                resources = sorted(up.links)
                for resource in resources[MAX_WATCHES:]:
                    up.links[resource].set("failed", f"more than {MAX_WATCHES} resources of "
                                                     "this robot are watched at once")
                opened = up.opened
                reason = await self._stream(up, resources[:MAX_WATCHES])
                if up.opened != opened:
                    delay = RETRY_S  # it streamed: a later failure starts the pauses again
                if self._expire(up) or up.changed.is_set():
                    delay = RETRY_S
                    continue  # the set changed: open again at once
                if reason:
                    for resource in resources[:MAX_WATCHES]:
                        if resource in up.links:
                            self._fail(up, resource, reason)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, RETRY_MAX_S)
        finally:
            if self.upstreams.get(up.peer) is up and not up.links:
                del self.upstreams[up.peer]

    async def _stream(self, up: _Upstream, resources: list[str]) -> str:
        """Read one stream until the resource set changes ('') or it fails (the reason)."""
        fed = self.links.fed
        peer = fed.table.peers.get(up.peer)
        if peer is None or not peer.online:
            return "the peer fails its health check"
        for resource in resources:
            up.links[resource].set("linking")
        headers = self.links._headers(None, peer)
        headers.pop("Content-Type", None)
        headers["Accept"] = "text/event-stream"
        vendor = self.links.engine.state.vendor
        query = urlencode([("watch", r) for r in resources])
        url = f"{peer.client.api(f'/x-{vendor}-page-stream')}?{query}"
        try:
            async with self.links.session.get(url, headers=headers) as resp:
                if resp.status != 200:
                    body = (await resp.read())[:200].decode("utf-8", "replace")
                    return f"its page stream answered {resp.status}: {body}"
                up.opened += 1
                return await self._read(up, resources, peer, resp)
        except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
            fed.table.suspect(up.peer)
            return f"the connection broke ({type(exc).__name__})"

    async def _read(self, up: _Upstream, resources: list[str], peer: Any,
                    resp: aiohttp.ClientResponse) -> str:
        buffer = bytearray()
        def stop() -> str | None:
            if not peer.online or self.links.fed.table.peers.get(up.peer) is not peer:
                return "its health check failed"
            return "" if self._due(up) else None

        while True:
            if self._due(up):
                return ""
            chunk = await next_chunk(resp, stop)
            if isinstance(chunk, str):
                return chunk
            if not chunk:
                return "the stream ended"
            buffer.extend(chunk)
            for event, data in parse_frames(buffer):
                with contextlib.suppress(orjson.JSONDecodeError, TypeError, ValueError):
                    self._frame(up, resources, event, orjson.loads(data))

    @staticmethod
    def _due(up: _Upstream) -> bool:
        """True when the stream must be opened again: resources joined or long unwatched."""
        return up.changed.is_set() or bool(up.idle) and min(
            up.idle.values()) <= time.monotonic() - LINGER_S

    def _frame(self, up: _Upstream, resources: list[str], event: str, body: Any) -> None:
        """One event of the robot's page stream into the shared links."""
        if not isinstance(body, dict):
            return
        if event == "watching":
            for item in body.get("accepted") or []:
                link = self._link(up, resources, item.get("watch"))
                if link is not None:
                    link.set("linked")
                    up.told.discard(resources[item["watch"]])
            for item in body.get("refused") or []:
                link = self._link(up, resources, item.get("watch"))
                if link is not None:
                    reason = f"refused: {item.get('status')} {item.get('message', '')}"
                    self._fail(up, resources[item["watch"]], reason.strip())
            return
        link = self._link(up, resources, body.get("watch"))
        if link is None:
            return
        if event == "sample" and isinstance(body.get("frame"), dict):
            owners = up.owners.get(resources[body["watch"]])
            if owners:
                link.received += 1
                self.links.relayed += 1
                self.links.engine.relayed(next(iter(owners)), link, body["frame"])
        elif event == "watch-end" and not body.get("renewed"):
            link.set("failed", "its subscription ended and was not renewed")

    def _fail(self, up: _Upstream, resource: str, reason: str) -> None:
        """A resource's link failed: its watchers hear it once per failure in a row."""
        up.links[resource].set("failed", reason)
        if resource in up.told:
            return
        up.told.add(resource)
        for owner in list(up.owners.get(resource, ())):
            self.links.engine.peer_failed(owner, up.peer, reason)

    @staticmethod
    def _link(up: _Upstream, resources: list[str], index: Any) -> Link | None:
        if not isinstance(index, int) or not 0 <= index < len(resources):
            return None
        return up.links.get(resources[index])
