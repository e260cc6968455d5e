"""The federation service: peers, the fleet view, fan-out reads and forwarding for one gateway.

A collection handler asks `contributors(request, entity)` which peers hold part of the entity
(local apps answer through the handler's own code), then `merge_list(...)` merges the local
items with the peers' answers. Requests for entities a peer alone owns never reach a handler:
the middleware hands them to `forward`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Any
from urllib.parse import quote

from aiohttp import web

from ..auth.enforce import claims_of
from ..http import client_tls, hot
from ..http.jsonutil import JSON_TYPE, dumps
from ..http.state import GatewayState
from ..model.entities import Entity, EntitySet
from ..process.settings import ServerSettings
from .client import base_url
from .combine import PeerAnswer, combine
from .connect_auth import ConnectGate
from .fanout import gather
from .fleet import FleetView, Origin, local_view, merge
from .mdns_trust import GOODBYE_WINDOW_S, HOLD, REMOVE, REPOINT, MdnsTrust, refusal
from .peer_auth import PeerAuth, discovered_peer_allowed
from .peers import Peer, PeerTable
from .readcache import CACHEABLE, ReadCache
from .relay import FaultRelay
from .settings import AggregationSettings, FederationSettings

log = logging.getLogger(__name__)

_CACHE_AGE = "federation_cache_age_s"  # request key: oldest cached answer a merge used
_CACHE_OLDEST = "federation_cache_oldest"  # request key: fetch time of the oldest answer used
_CACHE_COMPLETE = "federation_cache_complete"  # request key: every peer answered
_AGE_MARK = "\x00age\x00"  # age_ms while a merged body is serialized for the body cache
_AGE_BYTES = b'"age_ms":"\\u0000age\\u0000"'
_AGE_KEY = b'"age_ms":'
_MAX_MERGES = 1024

# Headers every forwarded and fanned-out call carries over from the caller.
PASSED_HEADERS = ("X-Client-Id", "Accept-Language")


class FederationService:
    """Peers (static and mDNS), their merged entities, and the calls made to them."""

    def __init__(self, state: GatewayState) -> None:
        self.state = state
        self.settings = state.settings.typed(FederationSettings.from_settings)
        self.auth = PeerAuth.from_settings(state.settings)
        self.xv = state.xv
        self.no_fan_out_header = f"X-{state.vendor.capitalize()}-No-Fan-Out"
        self.table = PeerTable(self.settings, self.auth, state.vendor, self._changed)
        self.view: FleetView = local_view(EntitySet())
        self.relay = FaultRelay(self.table, self._relay_headers, self.xv, self.rename)
        self.fan_out_path_header = f"X-{state.vendor.capitalize()}-Fan-Out-Path"
        self.mdns: Any = None
        self.mdns_trust = MdnsTrust()  # announcements never move a peer that answers
        self._background: set[asyncio.Task[None]] = set()
        self.table.on_status = self._status
        self.tunnels: dict[str, Any] = {}  # robots connected out to this gateway (connect_in.py)
        self.connect_gate = ConnectGate.from_settings(state.settings)
        self.discovered_refused = 0
        # aggregation.cache.*: merged reads served from peers' cached answers (readcache.py)
        self.read_cache: ReadCache | None = None
        aggregation = state.settings.typed(AggregationSettings.from_settings)
        if aggregation.cache_enabled:
            self.read_cache = ReadCache(aggregation.cache_max_age_ms / 1000)
        self._cache_signals = contextlib.ExitStack()
        # the last merge of each list read: (view, local part, peer answers, merged body)
        self._merges: dict[Any, tuple[Any, tuple[bytes, bytes], tuple[PeerAnswer, ...],
                                      dict[str, Any]]] = {}
        for warning in (*self.settings.warnings, *self.connect_gate.credentials.warnings()):
            log.warning("%s", warning)

    # -- lifecycle ------------------------------------------------------------------------

    def attach(self, cache: Any) -> None:
        """Serve the merged set from the entity cache from now on."""
        cache.merger = self._merge
        cache.remerge()

    async def start(self) -> None:
        """Start probing static peers and mDNS; nothing here waits on a peer."""
        await client_tls.ensure_ca()  # peers may be https://
        for peer in self.settings.peers:
            self.table.add(peer.name, peer.url, discovered=False)
        mdns = self.settings.mdns
        if mdns.announce or mdns.discover:
            from .mdns import Mdns  # noqa: PLC0415 - mdns.py: the only zeroconf importer

            srv = self.state.settings.typed(ServerSettings.from_settings)
            self.mdns = Mdns(mdns, srv.host, srv.port, self._found, self._lost)
            await self.mdns.start()
        if self.read_cache is not None:  # peers' fault events keep the cache current
            self._cache_signals.enter_context(self.relay.attached(self._peer_event, stream=False))

    async def stop(self) -> None:
        """Stop mDNS and every peer."""
        self._cache_signals.close()
        for ws in list(self.tunnels.values()):
            await ws.close()
        if self.mdns is not None:
            await self.mdns.stop()
        await self.relay.close()
        await self.table.close()

    def _merge(self, local: EntitySet, generation: int) -> EntitySet:
        self.view = merge(local, self.table.sets(), generation)
        return self.view.entities

    def _changed(self) -> None:
        if self.read_cache is not None:
            self.read_cache.all_changed()
        if self.state.cache is not None:
            self.state.cache.remerge()

    # -- mDNS -----------------------------------------------------------------------------

    def _found(self, name: str, url: str) -> None:
        peer = self.table.peers.get(name)
        if peer is not None and not peer.discovered:
            return  # a configured peer of the same name wins
        if name == self.settings.self_name:
            return
        if not discovered_peer_allowed(url, self.auth.require_tls):
            self.discovered_refused += 1
            return
        if peer is None:
            opts = self.settings.mdns
            why = refusal(name, url, {p.name: p.url for p in self.table.peers.values()
                                      if p.discovered}, opts.max_peers, opts.max_per_address)
            if why:
                self.discovered_refused += 1
                log.warning("peer %s at %s refused: %s", name, url, why)
                return
        else:
            url = base_url(url)
            again = self.mdns_trust.moves.get(name) == url
            if self.mdns_trust.announced(name, url, peer.url, peer.online) == HOLD:
                if not again:
                    log.warning("mDNS: %s announced at %s while answering at %s: moved only "
                                "if it stops answering there", name, url, peer.url)
                self.table.suspect(name)
                return
        self.table.add(name, url, discovered=True)

    async def _lost(self, name: str) -> None:
        peer = self.table.peers.get(name)
        if peer is None or not peer.discovered:
            return
        if self.mdns_trust.goodbye(name, peer.online, time.monotonic()) == REMOVE:
            await self.table.remove(name)
            return
        log.info("mDNS: goodbye from %s while it answers: removed if it stops answering "
                 "within %.0f s", name, GOODBYE_WINDOW_S)
        self.table.suspect(name)

    def _status(self, peer: Peer) -> None:
        """A discovered peer that stops answering follows a goodbye or announcement held."""
        if peer.online or not peer.discovered:
            return
        action = self.mdns_trust.offline(peer.name, time.monotonic())
        if action is None:
            return
        if action[0] == REMOVE:
            log.info("mDNS: %s stopped answering after its goodbye: removed", peer.name)
            task = asyncio.get_running_loop().create_task(self.table.remove(peer.name))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
        elif action[0] == REPOINT:
            log.info("mDNS: %s stopped answering at %s: moved to %s", peer.name, peer.url,
                     action[1])
            self.table.add(peer.name, action[1], discovered=True)

    # -- health ---------------------------------------------------------------------------

    def health(self) -> list[dict[str, Any]]:
        """The /health `peers` block."""
        return self.table.health()

    def _peer_event(self, event: str, data: dict[str, Any]) -> None:
        """A relayed fault event: the answers of the peer that raised it are stale."""
        assert self.read_cache is not None
        peer = (data.get(self.xv) or {}).get("peer")
        if isinstance(peer, str):
            self.read_cache.peer_changed(peer)

    # -- requests -------------------------------------------------------------------------

    def no_fan_out(self, request: hot.HasHeaders) -> bool:
        """True when the caller asked for this gateway's answer alone (presence only); a site
        primary (aggregation.reexport) answers for its whole site even then (sites.py)."""
        return not self.settings.reexport and self.no_fan_out_header in request.headers

    def peer_headers(self, request: web.Request | None, peer: Peer) -> dict[str, str]:
        """X-Client-Id and the Authorization this call to the peer carries."""
        headers: dict[str, str] = {}
        caller = None
        if request is not None:
            for name in PASSED_HEADERS:
                value = request.headers.get(name)
                if value is not None:
                    headers[name] = value
            caller = request.headers.get("Authorization")
        auth = self.auth.authorization(caller=caller, discovered=peer.discovered)
        if auth:
            headers["Authorization"] = auth
        client = headers.get("X-Client-Id")
        claims = claims_of(request) if request is not None and client else None
        if claims is not None and auth != caller:
            # The peer sees this gateway's credential, not the caller's token: the caller's
            # subject goes into the client id, so the peer's locks tell two authenticated
            # callers sending the same X-Client-Id apart (lock owner: subject and client id).
            headers["X-Client-Id"] = f"{claims.subject}/{client}"
        return headers

    def contributors(self, request: web.Request, entity: Entity) -> list[Origin]:
        """The peers holding part of an entity (empty with X-Vendor-No-Fan-Out)."""
        if self.no_fan_out(request):
            return []
        return self.view.peers_of(entity.kind, entity.id)

    def is_local(self, entity: Entity) -> bool:
        """True when this gateway contributes the entity itself."""
        return "local" in self.view.contributors(entity.kind, entity.id)

    async def call_peers(self, request: web.Request, paths: Sequence[tuple[str, str]],
                         cacheable: bool = False) -> list[PeerAnswer]:
        """GET (peer, path) in parallel within aggregation.timeout_ms, marked no-fan-out."""
        calls = []
        shared: dict[bool | None, dict[str, str]] = {}  # the headers depend on this alone
        for name, path in paths:
            peer = self.table.peers.get(name)
            kind = None if peer is None else peer.discovered
            headers = shared.get(kind)
            if headers is None:
                headers = shared[kind] = self.peer_headers(request, peer) \
                    if peer is not None else {}
                headers[self.no_fan_out_header] = "1"
            calls.append((name, path, headers))
        return await self._gather(request, calls, cacheable)

    async def _gather(self, request: web.Request | None,
                      calls: list[tuple[str, str, dict[str, str]]], cacheable: bool
                      ) -> list[PeerAnswer]:
        """The fan-out, answered from the read cache where it holds a valid answer."""
        cache = self.read_cache
        if cache is None or not cacheable:
            return await gather(self.table, calls, self.settings.budgets.timeout_s)
        now = time.monotonic()
        answers: dict[int, PeerAnswer] = {}
        ages: list[float] = []
        oldest = now
        live: list[tuple[int, tuple[str, str, dict[str, str]], Any, tuple[int, int]]] = []
        sorted_headers: dict[int, tuple[tuple[str, str], ...]] = {}  # calls share header dicts
        for i, (name, path, headers) in enumerate(calls):
            fields = sorted_headers.get(id(headers))
            if fields is None:
                fields = sorted_headers[id(headers)] = tuple(sorted(headers.items()))
            key = (name, path, fields)
            hit = cache.get(name, key, now)
            if hit is not None:
                answers[i] = hit[0]
                ages.append(hit[1])
                oldest = min(oldest, hit[2])
            else:
                live.append((i, (name, path, headers), key, cache.version(name)))
        if live:
            fetched = await gather(self.table, [c for _, c, _, _ in live],
                                   self.settings.budgets.timeout_s)
            done = time.monotonic()
            oldest = min(oldest, done)
            for (i, _call, key, version), answer in zip(live, fetched, strict=True):
                answers[i] = answer
                if answer.ok:
                    cache.put(key, answer, done, version)
                    ages.append(0.0)
        if request is not None:  # the freshness bound of this merged answer (x-vendor cache)
            request[_CACHE_AGE] = max(ages, default=0.0)
            request[_CACHE_OLDEST] = oldest
            request[_CACHE_COMPLETE] = all(a.ok for a in answers.values())
        return [answers[i] for i in range(len(calls))]

    async def merged_response(self, request: web.Request, what: Hashable,
                              stamp: Callable[[], object], collection: str,
                              build: Callable[[], Awaitable[dict[str, Any]]]) -> web.Response:
        """A merged list response; with the read cache its bytes are kept and served again
        (by the hot-answer fast path too) until a change signal, a new local stamp (`stamp()`,
        the local part's generation) or the age bound."""
        cache = self.read_cache
        if cache is None or collection not in CACHEABLE:
            return web.Response(body=dumps(await build()), content_type=JSON_TYPE)
        headers = request.headers
        key = (what, collection, request.query_string, headers.get("Authorization"),
               headers.get("X-Client-Id"), headers.get("Accept-Language"),
               headers.get(self.fan_out_path_header))
        view, local = self.view, stamp()
        raw = cache.body_get(key, local, time.monotonic())
        if raw is None:
            epoch = cache.epoch  # a change signal during the build leaves the body stale
            raw = self._keep(request, key, local, epoch, await build())
        if view is self.view and not self.no_fan_out(request):
            hot.offer_merged(self.state, request, self._hot_probe(key, stamp, view))
        return web.Response(body=raw, content_type=JSON_TYPE)

    def _hot_probe(self, key: tuple[Any, ...], stamp: Callable[[], object], view: FleetView
                   ) -> hot.RequestProbe:
        """merged_response's body lookup for the fast path (gateway/http/hot.py): the same
        key from the request's headers, while the fleet view (what the handler resolved and
        whether the forwarder takes the path) is the one this answer was built in."""
        cache = self.read_cache
        assert cache is not None
        what, collection, query = key[:3]
        no_fan_out, path_header = self.no_fan_out_header, self.fan_out_path_header

        def probe(request: hot.HasHeaders) -> bytes | None:
            headers = request.headers
            if self.view is not view or no_fan_out in headers:
                return None
            return cache.body_get((what, collection, query, headers.get("Authorization"),
                                   headers.get("X-Client-Id"), headers.get("Accept-Language"),
                                   headers.get(path_header)), stamp(), time.monotonic())

        return probe

    def _keep(self, request: web.Request, key: Hashable, stamp: object, epoch: int,
              body: dict[str, Any]) -> bytes:
        """body serialized; kept in the read cache when every peer answered."""
        assert self.read_cache is not None
        xv = body.get(self.xv)
        block = xv.get("cache") if isinstance(xv, dict) else None
        oldest = request.get(_CACHE_OLDEST)
        if not isinstance(block, dict) or oldest is None or not request.get(_CACHE_COMPLETE):
            return dumps(body)
        age = block["age_ms"]
        block["age_ms"] = _AGE_MARK
        raw = dumps(body)
        cut = raw.rfind(_AGE_BYTES)
        head, tail = raw[:cut + len(_AGE_KEY)], raw[cut + len(_AGE_BYTES):]
        self.read_cache.body_put(key, stamp, epoch, oldest, head, tail)
        return b"%b%d%b" % (head, age, tail)

    def cache_block(self, request: web.Request) -> dict[str, Any] | None:
        """x-vendor `cache` of a merged answer: the age bound and the oldest answer used."""
        if self.read_cache is None or _CACHE_AGE not in request:
            return None
        return {"max_age_ms": round(self.read_cache.max_age_s * 1000),
                "age_ms": round(request[_CACHE_AGE] * 1000)}

    async def peer_items(self, request: web.Request, entity: Entity, collection: str,
                         peers: Sequence[Origin]) -> list[PeerAnswer]:
        """Each contributing peer's items of one collection of the entity."""
        query = request.query_string
        tail = f"/{collection}?{query}" if query else f"/{collection}"
        paths = [(o.gateway, f"/{entity.kind}/{_quoted(o.remote_id)}{tail}") for o in peers]
        return await self.call_peers(request, paths, cacheable=collection in CACHEABLE)

    def rename(self, gateway: str, app_id: str) -> str:
        """Rule 5: the fleet id of a gateway's app."""
        return self.view.fleet_app_id(gateway, app_id)

    async def merge_list(self, request: web.Request, entity: Entity, collection: str,
                         local_items: list[dict[str, Any]], local_extra: dict[str, Any]
                         | None = None, *, peers: Sequence[Origin] | None = None,
                         limit: int | None = None) -> dict[str, Any]:
        """The list envelope of a collection merged over this gateway and its peers."""
        if peers is None:
            peers = self.contributors(request, entity)
        answers = await self.peer_items(request, entity, collection, peers)
        if collection == "logs":
            out = self.combine_list(entity, collection, local_items, local_extra, answers,
                                    limit)
            return self._with_cache_block(request, out)
        # Every peer answered the very bytes of the last merge (fanout.py hands back the same
        # answer objects), the local part and the fleet view are the same: so is the merge.
        key = (entity.kind, entity.id, collection, limit, request.query_string)
        local = (dumps(local_items), dumps(local_extra))
        last = self._merges.get(key)
        if last is not None and last[0] is self.view and last[1] == local \
                and len(last[2]) == len(answers) \
                and all(a is b for a, b in zip(last[2], answers, strict=True)):
            return self._with_cache_block(request, last[3])
        out = self.combine_list(entity, collection, local_items, local_extra, answers, limit)
        if all(a.ok for a in answers):
            if len(self._merges) >= _MAX_MERGES:
                self._merges.clear()
            self._merges[key] = (self.view, local, tuple(answers), out)
        return self._with_cache_block(request, out)

    def _with_cache_block(self, request: web.Request, body: dict[str, Any]) -> dict[str, Any]:
        """body (left unchanged) with the x-vendor cache block of this request, when cached."""
        block = self.cache_block(request)
        if block is None:
            return body
        out = dict(body)
        out[self.xv] = {**body[self.xv], "cache": block}
        return out

    def combine_list(self, entity: Entity, collection: str, local_items: list[dict[str, Any]],
                     local_extra: dict[str, Any] | None, answers: Sequence[PeerAnswer],
                     limit: int | None = None) -> dict[str, Any]:
        """The list envelope of local items merged with the peers' answers."""
        local = local_items if self.is_local(entity) or local_items else None
        merged = combine(collection, self.xv, local, answers, self.rename, limit,
                         memo=self.view, fragments=True)
        return self.envelope(merged.items, merged.extra, entity.id, local_extra)

    def _relay_headers(self, peer: Peer) -> dict[str, str]:
        return {**peer.own_headers(self.auth), self.no_fan_out_header: "1"}

    def answers_alone(self, request: hot.HasHeaders) -> bool:
        """True when GET /faults is this gateway's own answer: it has no peer, or it is
        already on the request's fan-out path (a robot read by its primary has neither)."""
        if not self.table.peers:
            return True
        path = request.headers.get(self.fan_out_path_header, "")
        return self.settings.self_name in path.split(",")

    async def merge_global_faults(self, request: web.Request, body: dict[str, Any]
                                  ) -> dict[str, Any]:
        """GET /faults over the fleet (X-Vendor-No-Fan-Out is not honoured here, per spec).

        A gateway already on the request's fan-out path answers alone, so primaries that
        discover each other do not ask one another in circles.
        """
        if self.answers_alone(request):
            return body
        path = [p for p in request.headers.get(self.fan_out_path_header, "").split(",") if p]
        query = f"?{request.query_string}" if request.query_string else ""
        calls = []
        for name in sorted(self.table.peers):
            peer = self.table.peers[name]
            headers = self.peer_headers(request, peer)
            headers[self.fan_out_path_header] = ",".join([*path, self.settings.self_name])
            calls.append((name, f"/faults{query}", headers))
        answers = await self._gather(request, calls, cacheable=True)
        merged = combine("faults", self.xv, body["items"], answers, self.rename, memo=self.view)
        out = dict(body)
        out["items"] = merged.items
        xv = dict(body.get(self.xv) or {})
        xv["total_count"] = len(merged.items)
        if "count" in xv:  # the reference's name for total_count (gateway/faults/wire.py)
            xv["count"] = len(merged.items)
        for key, value in merged.extra.items():
            xv[key] = value
        block = self.cache_block(request)
        if block is not None:
            xv["cache"] = block
        out[self.xv] = xv
        for key in ("muted_count", "cluster_count"):  # correlation counts add up
            if isinstance(out.get(key), int):
                out[key] += sum(a.body.get(key, 0) for a in answers
                                if a.ok and isinstance(a.body.get(key), int))
        return out

    async def merge_server_list(self, request: web.Request, collection: str, path: str,
                                local_items: list[dict[str, Any]],
                                extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """A server-level list (version-info, global faults) merged over every peer."""
        query = f"?{request.query_string}" if request.query_string else ""
        answers = await self.call_peers(request, [(name, path + query)
                                                  for name in sorted(self.table.peers)],
                                        cacheable=collection in CACHEABLE)
        merged = combine(collection, self.xv, local_items, answers, self.rename,
                         memo=self.view, fragments=True)
        out = self.envelope(merged.items, merged.extra, None, extra)
        block = self.cache_block(request)
        if block is not None:
            out[self.xv]["cache"] = block
        return out

    def envelope(self, items: list[dict[str, Any]], extra: dict[str, Any],
                 entity_id: str | None, local_extra: dict[str, Any] | None = None
                 ) -> dict[str, Any]:
        """The list envelope of merged items (local partial fields kept and extended)."""
        xv: dict[str, Any] = {"total_count": len(items)}
        if entity_id is not None:
            xv["entity_id"] = entity_id
        for key, value in (local_extra or {}).items():
            xv[key] = value
        for key, value in extra.items():
            if isinstance(value, list) and isinstance(xv.get(key), list):
                xv[key] = xv[key] + value
            else:
                xv[key] = value
        return {"items": items, self.xv: xv}


@functools.lru_cache(maxsize=4096)
def _quoted(entity_id: str) -> str:
    return quote(entity_id, safe="")


def service_of(state: GatewayState) -> FederationService | None:
    """The running federation service, or None when aggregation is off."""
    fed: FederationService | None = state.aggregation
    return fed


FEDERATION: web.AppKey[FederationService] = web.AppKey("federation", FederationService)
