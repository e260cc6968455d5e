"""Push delivery on mixed entities: a trigger or subscription also covers the members on peers.

An area, component or function that this gateway and peers both contribute (merged by id)
gets, next to its local trigger or subscription, one on each contributing peer's copy of the
entity (created within aggregation.forward_timeout_ms). Each peer's `/events` stream is read
by a link task: trigger firings go into the one trigger's stream, subscription frames keep the
peer's newest items for the sampler to merge. A peer that stops answering (connection cut or
health check failing) puts an `event: error` `x-vendor-peer-unavailable` frame in the stream;
the local members keep streaming.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson

from ..http import client_tls
from ..model.resource_uris import ResourceRef
from .fleet import FleetView, Origin
from .link import Link, next_chunk
from .peer_watch import PeerWatches
from .relay import parse_frames
from .service import FederationService

log = logging.getLogger(__name__)

RELINK_S = 5.0  # a failed or ended link is created again this long after, once its peer is up
RELINK_MAX_S = 60.0  # ... doubling per failure in a row up to this
# A trigger copy lives this long unless renewed (every third of it) by the primary: copies of
# a primary that died or restarted end on their own.
COPY_LEASE_S = 120


@dataclass(eq=False)
class _Links:
    owner: Any
    links: list[Link] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)  # failed links in a row, per peer
    local_only: bool = False  # created with X-Vendor-No-Fan-Out: never linked
    shared: bool = False  # a page-stream watch: its links are shared upstreams (peer_watch)
    joined: set[tuple[str, str]] = field(default_factory=set)  # (peer, resource), shared


class PeerLinks:
    """The peer links of every trigger and subscription on a mixed entity of this primary."""

    def __init__(self, engine: Any, fed: FederationService) -> None:
        self.engine = engine
        self.fed = fed
        self._by_owner: dict[int, _Links] = {}
        self._session: aiohttp.ClientSession | None = None
        self._calls: set[asyncio.Task[Any]] = set()
        self.watches = PeerWatches(self)
        self.relayed = 0
        self.peer_errors = 0
        self.sweeps = 0

    @property
    def session(self) -> aiohttp.ClientSession:
        """One session for link streams (kept out of the peers' pools for fan-out reads)."""
        if self._session is None or self._session.closed:
            client_tls.load_ca()  # done by the federation service at start
            self._session = aiohttp.ClientSession(
                trust_env=False, auto_decompress=False,
                timeout=aiohttp.ClientTimeout(total=None,
                                              connect=self.fed.settings.budgets.timeout_s))
        return self._session

    def peers_of(self, entity_type: str, entity_id: str) -> list[Any]:
        """Peers contributing a merged entity answered here (several peers, or this gateway
        and peers); empty when it is local-only (or a peer alone owns it: forwarded)."""
        return mixed_peers(self.fed.view, entity_type, entity_id)

    def of(self, owner: Any) -> list[Link]:
        """The links of an owner."""
        entry = self._by_owner.get(id(owner))
        return entry.links if entry is not None else []

    def body(self, owner: Any) -> dict[str, Any] | None:
        """x-vendor `peers` of an owner: per peer, its link state; None without links."""
        links = self.of(owner)
        return {link.peer: link.body() for link in links} if links else None

    async def link(self, owner: Any, collection_word: str, body: dict[str, Any],
                   request: Any) -> None:
        """Create the owner's copy on each contributing peer (in parallel, within budget)."""
        if self.fed.no_fan_out(request):  # a peer's own copy, or a caller wanting this robot
            self._by_owner[id(owner)] = _Links(owner, local_only=True)
            return
        targets = self.targets(owner)
        if not targets:
            return
        entry = _Links(owner)
        self._by_owner[id(owner)] = entry
        links = [Link(t.peer, f"{t.entity_path}/{collection_word}") for t in targets]
        entry.links.extend(links)
        bodies = [{**copy_body(collection_word, body), "resource": t.resource} for t in targets]
        await asyncio.gather(*(self._create(entry, link, b, request)
                               for link, b in zip(links, bodies, strict=True)))

    def share(self, owner: Any, request: Any) -> None:
        """Link a page stream's watch through the peers' shared upstreams (one stream per
        robot however many pages and topics; see peer_watch) instead of a copy per watch."""
        if self.fed.no_fan_out(request):
            self._by_owner[id(owner)] = _Links(owner, local_only=True)
            return
        entry = self._by_owner[id(owner)] = _Links(owner, shared=True)
        self._join(entry)

    def _join(self, entry: _Links) -> None:
        for t in self.targets(entry.owner):
            if (t.peer, t.resource) not in entry.joined:
                entry.joined.add((t.peer, t.resource))
                entry.links.append(self.watches.join(t.peer, t.resource, entry.owner,
                                                     t.entity_path))

    def targets(self, owner: Any) -> list[CopyTarget]:
        """Where the owner's copies go (see copy_targets)."""
        ref = owner.ref if hasattr(owner, "ref") else owner.spec.ref
        return copy_targets(self.fed.view, owner.entity_type, owner.entity_id, ref)

    def reconcile(self, owners: list[Any],
                  body_of: Callable[[Any], tuple[str, dict[str, Any]]]) -> None:
        """Link owners to peers that joined their entity, came back after failing, or ended
        their copy; restored triggers get their links here too. `body_of(owner)` gives the
        collection word and create body of a copy."""
        now = time.monotonic()
        self.sweeps += 1
        for owner in owners:
            entry = self._by_owner.get(id(owner))
            if entry is not None and entry.local_only:
                continue
            if entry is not None and entry.shared:
                self._join(entry)  # a peer that joined the entity since
                continue
            targets = self.targets(owner)
            if not targets:
                continue
            if entry is None:
                entry = self._by_owner[id(owner)] = _Links(owner)
            have = {link.peer: link for link in entry.links}
            for target in targets:
                link = have.get(target.peer)
                if link is not None and link.state == "linked" and link.leased \
                        and now - link.renewed >= COPY_LEASE_S / 3:
                    link.renewed = now  # the copy's lease: expiry = now + lease
                    self._spawn(self._call("PUT", link.peer, link.item_path,
                                           {"lifetime": COPY_LEASE_S}))
                if link is not None and (link.state in ("linking", "linked") or now - link.since
                                         < relink_delay(entry.failures.get(link.peer, 0))):
                    continue
                peer = self.fed.table.peers.get(target.peer)
                if peer is None or not peer.online:
                    continue
                if link is not None:
                    entry.links.remove(link)
                word, body = body_of(owner)
                body = {**copy_body(word, body), "resource": target.resource}
                fresh = Link(target.peer, f"{target.entity_path}/{word}")
                entry.links.append(fresh)
                self._spawn(self._create(entry, fresh, body, None))

    async def _create(self, entry: _Links, link: Link, body: dict[str, Any],
                      request: Any) -> None:
        fed = self.fed
        peer_name, path = link.peer, link.item_path
        peer = fed.table.peers.get(peer_name)
        if peer is None or not peer.online:
            self._failed(entry, link, "the peer fails its health check")
            return
        budget = fed.settings.budgets.forward_s
        try:
            async with self.session.post(peer.client.api(path), data=orjson.dumps(body),
                                         headers=self._headers(request, peer),
                                         timeout=aiohttp.ClientTimeout(total=budget)) as resp:
                answer = await resp.read()
        except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
            fed.table.suspect(peer_name)
            self._failed(entry, link, f"no answer: {type(exc).__name__}")
            return
        if resp.status != 201:
            self._failed(entry, link, f"status {resp.status}: "
                         f"{answer[:200].decode('utf-8', 'replace')}")
            return
        try:
            created = orjson.loads(answer)
            link.item_path = f"{path}/{quote(str(created['id']), safe='')}"
        except (orjson.JSONDecodeError, KeyError, TypeError):
            self._failed(entry, link, "its answer names no copy id")
            return
        if self._by_owner.get(id(entry.owner)) is not entry:  # the owner ended meanwhile
            self._delete(peer_name, link.item_path)
            return
        link.set("linked")
        link.task = asyncio.ensure_future(self._follow(entry, link, dict(
            self._headers(request, peer))))

    @staticmethod
    def _failed(entry: _Links, link: Link, reason: str) -> None:
        link.set("failed", reason)
        entry.failures[link.peer] = entry.failures.get(link.peer, 0) + 1

    def _headers(self, request: Any, peer: Any) -> dict[str, str]:
        headers = self.fed.peer_headers(request, peer)
        headers[self.fed.no_fan_out_header] = "1"
        headers["Content-Type"] = "application/json"
        headers.update(peer.client.fixed_headers)  # this session is not the peer's own
        return headers

    async def _follow(self, entry: _Links, link: Link, headers: dict[str, str]) -> None:
        """Read the peer's event stream into the owner until either ends.

        A link that fails puts one error event in the owner's stream (not again while its
        peer keeps failing), and its copy is deleted (a dead peer's ends by its lease).
        """
        fed = self.fed
        owner = entry.owner
        peer = fed.table.peers.get(link.peer)
        reason = ""
        refused = False
        headers.pop("Content-Type", None)
        headers["Accept"] = "text/event-stream"
        try:
            if peer is None:
                raise OSError("peer removed")
            async with self.session.get(peer.client.api(link.item_path + "/events"),
                                        headers=headers) as resp:
                if resp.status != 200:
                    reason, refused = f"its stream answered {resp.status}", True
                else:
                    entry.failures.pop(link.peer, None)  # streaming: the peer is fine
                    reason = await self._read(owner, link, peer, resp)
        except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
            reason = f"the connection broke ({type(exc).__name__})"
        if self._by_owner.get(id(owner)) is not entry:
            return  # ended here: nothing to tell
        self._delete(link.peer, link.item_path)
        if not reason:
            link.set("ended")
            return
        first = entry.failures.get(link.peer, 0) == 0
        self._failed(entry, link, reason)
        self.peer_errors += 1
        if not refused:
            fed.table.suspect(link.peer)
        if first:
            self.engine.peer_failed(owner, link.peer, reason)

    async def _read(self, owner: Any, link: Link, peer: Any,
                    resp: aiohttp.ClientResponse) -> str:
        """Frames into the owner; the reason the peer failed, or '' when it ended the stream."""
        buffer = bytearray()

        def stop() -> str | None:
            if not peer.online or self.fed.table.peers.get(link.peer) is not peer:
                return "its health check failed"
            return None

        while True:
            chunk = await next_chunk(resp, stop)
            if isinstance(chunk, str):
                return chunk
            if not chunk:
                return ""
            buffer.extend(chunk)
            for event, data in parse_frames(buffer):
                try:
                    parsed = orjson.loads(data)
                except orjson.JSONDecodeError:
                    continue
                link.received += 1
                self.relayed += 1
                if event == "message":
                    self.engine.relayed(owner, link, parsed)

    def drop(self, owner: Any) -> None:
        """The owner ended: stop its link tasks and delete its copies on the peers."""
        entry = self._by_owner.pop(id(owner), None)
        if entry is None:
            return
        if entry.shared:
            for link in entry.links:
                self.watches.leave(link.peer, link, owner)
            return
        for link in entry.links:
            if link.task is not None:
                link.task.cancel()
            if link.state == "linked":
                self._delete(link.peer, link.item_path)
            link.set("ended")

    def update(self, owner: Any, body: dict[str, Any]) -> None:
        """A subscription PUT goes to its peer copies too (best effort; trigger copies live by
        their lease and end with their owner)."""
        for link in self.of(owner):
            if link.state == "linked":
                self._spawn(self._call("PUT", link.peer, link.item_path, body))

    def _delete(self, peer: str, path: str) -> None:
        self._spawn(self._call("DELETE", peer, path, None))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._calls.add(task)
        task.add_done_callback(self._calls.discard)

    async def _call(self, method: str, peer_name: str, path: str,
                    body: dict[str, Any] | None) -> None:
        peer = self.fed.table.peers.get(peer_name)
        if peer is None:
            return
        headers = self._headers(None, peer)
        budget = self.fed.settings.budgets.forward_s
        try:
            async with self.session.request(
                    method, peer.client.api(path), headers=headers,
                    data=orjson.dumps(body) if body is not None else None,
                    timeout=aiohttp.ClientTimeout(total=budget)) as resp:
                await resp.read()
        except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
            log.info("%s %s on peer %s failed: %s", method, path, peer_name,
                     type(exc).__name__)

    async def close(self) -> None:
        """Drop every link and close the session."""
        for entry in list(self._by_owner.values()):
            self.drop(entry.owner)
        await self.watches.close()
        if self._calls:  # the peers' copies are deleted before the session goes
            await asyncio.wait(set(self._calls), timeout=2.0)
        if self._session is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._session.close(), 2.0)

    def health(self) -> dict[str, int]:
        """Figures for /health."""
        linked = sum(1 for e in self._by_owner.values() for link in e.links
                     if link.state == "linked")
        return {"peer_links": linked, "peer_page_streams": self.watches.streams(),
                "peer_events_relayed": self.relayed,
                "peer_link_failures": self.peer_errors, "peer_link_sweeps": self.sweeps}


def relink_delay(failures: int) -> float:
    """Seconds before a link is created again after `failures` failed links in a row."""
    return min(RELINK_MAX_S, RELINK_S * 2 ** max(0, failures - 1))


def copy_body(word: str, body: dict[str, Any]) -> dict[str, Any]:
    """The create body of a copy on a peer: a trigger copy is never persistent and leased."""
    if word != "triggers":
        return dict(body)
    return {**body, "persistent": False, "lifetime": COPY_LEASE_S}


@dataclass(frozen=True)
class CopyTarget:
    """One copy of a trigger or subscription: on which peer, on which of its entities, and the
    observed resource in that peer's own ids."""

    peer: str
    entity_path: str  # /{kind}/{id on the peer}
    resource: str


def copy_targets(view: FleetView, entity_type: str, entity_id: str,
                 ref: ResourceRef) -> list[CopyTarget]:
    """The copies an owner answered here needs: one per contributing peer of a mixed entity,
    one on the owning peer of a peer-owned entity (a page stream's watch is answered here, not
    forwarded); an item a fleet member qualifies (`<app id>:<item>`) only on that member's
    peer, observed on the member app itself (a peer names its items without qualifier)."""
    owner = view.owner(entity_type, entity_id)
    origins = [owner] if owner is not None else mixed_peers(view, entity_type, entity_id)
    if not origins:
        return []
    member, sep, item = ref.path[1:].partition(":")
    entity = view.entities.get(entity_type, entity_id)
    if sep and entity is not None and ref.entity_id == entity_id and member in {
            a.id for a in view.entities.member_apps(entity)}:
        app = view.app_origin(member)
        if app is None or app.is_local or app.gateway not in {o.gateway for o in origins}:
            return []  # a local member (sampled here) or a peer that left
        app_id = quote(app.remote_id, safe="")
        return [CopyTarget(app.gateway, f"/apps/{app_id}", ResourceRef(
            "apps", app.remote_id, ref.collection, "/" + item.lstrip("/")).uri)]
    out = []
    for origin in origins:
        remote = ref.entity_id
        if (ref.entity_type, ref.entity_id) == (entity_type, entity_id):
            remote = origin.remote_id
        out.append(CopyTarget(origin.gateway,
                              f"/{entity_type}/{quote(origin.remote_id, safe='')}",
                              ResourceRef(ref.entity_type, remote, ref.collection,
                                          ref.path).uri))
    return out


def mixed_peers(view: FleetView, entity_type: str, entity_id: str) -> list[Origin]:
    """The peers whose members a trigger or subscription answered here must also cover."""
    if view.owner(entity_type, entity_id) is not None:
        return []  # a peer alone owns it: requests for it are forwarded
    return view.peers_of(entity_type, entity_id)
