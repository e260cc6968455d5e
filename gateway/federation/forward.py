"""Forwarding: requests for peer-owned entities and member-qualified items go to the owning peer.

Spec "Aggregation behaviour" 4-5. The middleware calls `Forwarder.__call__` after the guard
and before the handler; it returns None for requests this gateway answers itself. A peer's
answer is streamed back (SSE, Range downloads) with its status and headers; `Location` and
entity hrefs of a JSON document are rewritten to the fleet ids; any other body (a download)
is relayed from its first byte as it comes, at the pace the client takes it. Outcomes: 504
`not-responding` when a budget ran out (or the owning peer already fails its health check),
502 `x-vendor-peer-unavailable` when nothing answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import quote, urlsplit

import aiohttp
import orjson
from aiohttp import web

from ..errors import not_found, not_responding, vendor_error
from ..http.routes import API_PREFIX, ENTITY_PARAM, Route
from ..model.entities import Entity
from ..model.items import ItemLookupError, MemberItem, resolve, resolve_topic
from .client import CHUNK
from .combine import combine
from .peers import Peer
from .service import FederationService

log = logging.getLogger(__name__)

# Sub-resources answered from the fleet view on this gateway, never forwarded.
DISCOVERY = frozenset({"", "is-located-on", "belongs-to", "hosts", "depends-on",
                       "subcomponents", "contains", "components", "subareas", "docs"})
# Item routes whose id may name a member (spec "Aggregation behaviour" 4).
ITEM_PARAMS = {"data": "data_id", "operations": "op_id", "configurations": "param_name"}
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                        "te", "trailer", "trailers", "transfer-encoding", "upgrade", "host",
                        "authorization", "content-length"})
RESPONSE_DROP = frozenset({"connection", "keep-alive", "transfer-encoding", "server", "date",
                           "content-length"})
SMALL_BODY = 1024 * 1024
PEER_CHECK_S = 0.25  # how often a relayed SSE stream looks at its peer's health
_TEMPLATE = re.compile(r"\{([a-z_]+)\}")


class BudgetExceeded(Exception):
    """A forward's time budget ran out: the setting that holds it and its seconds."""

    def __init__(self, setting: str, budget_s: float) -> None:
        super().__init__(setting)
        self.setting = setting
        self.budget_s = budget_s


class Target:
    """Where a forwarded request goes: a peer and the path (with query) on it."""

    def __init__(self, peer: str, path: str, entity: tuple[str, str, str] | None) -> None:
        self.peer = peer
        self.path = path
        self.entity = entity  # (kind, id on the peer, fleet id) of the addressed entity


def _fill(template: str, values: dict[str, str]) -> str:
    return _TEMPLATE.sub(lambda m: quote(values[m.group(1)], safe=""), template)


def _split(route: Route) -> tuple[str, str, str] | None:
    """(kind, collection word, rest template) of an entity route, else None."""
    parts = route.path.split("/")
    if len(parts) < 3 or parts[1] not in ENTITY_PARAM or parts[2] != "{" + \
            ENTITY_PARAM[parts[1]] + "}":
        return None
    rest = "/".join(parts[3:])
    return parts[1], (parts[3] if len(parts) > 3 else ""), ("/" + rest if rest else "")


def rewrite_location(location: str, peer: str, fed: FederationService) -> str:
    """A peer's Location with its own API path turned into the fleet's."""
    parts = urlsplit(location)
    path = parts.path
    if not path.startswith(API_PREFIX + "/"):
        return location
    segs = path.split("/")  # ['', 'api', 'v1', kind, id, ...]
    if len(segs) > 4 and segs[3] == "apps":
        segs[4] = quote(fed.rename(peer, segs[4]), safe="")
    out = "/".join(segs)
    return out + (f"?{parts.query}" if parts.query else "")


class Forwarder:
    """Decides and performs forwards for one gateway."""

    def __init__(self, fed: FederationService) -> None:
        self.fed = fed

    def forwards_nothing(self) -> bool:
        """True while no entity of the fleet view comes from a peer: `target` is None for
        every request (a robot that announces itself and has no peers of its own)."""
        return self.fed.view.local_only

    async def __call__(self, request: web.Request, route: Route) -> web.StreamResponse | None:
        """The peer's answer for a request this gateway does not answer itself, else None."""
        target = await self.target(request, route)
        if target is None:
            return None
        return await self.forward(request, route, target)

    async def target(self, request: web.Request, route: Route) -> Target | None:
        """The forward target of a request, or None to handle it here."""
        split = _split(route)
        if split is None:
            return None
        kind, word, rest = split
        if word in DISCOVERY:
            return None
        view = self.fed.view
        info = request.match_info
        entity_id = info[ENTITY_PARAM[kind]]
        values = {k: v for k, v in info.items()}
        query = f"?{request.query_string}" if request.query_string else ""
        owner = view.owner(kind, entity_id)
        if owner is not None:
            values[ENTITY_PARAM[kind]] = owner.remote_id
            return Target(owner.gateway, _fill(route.path, values) + query,
                          (kind, owner.remote_id, entity_id))
        param = ITEM_PARAMS.get(word)
        if param is None or param not in info or not view.peers_of(kind, entity_id):
            return None
        entity = view.entities.get(kind, entity_id)
        if entity is None:
            return None
        member, item = await self._member_item(request, entity, word, info[param])
        if member is None:
            return None
        origin = view.app_origin(member)
        if origin is None or origin.is_local:
            return None
        values[param] = item
        values["app_id"] = origin.remote_id
        tail = "/".join(rest.split("/")[3:])  # what follows /{word}/{param}
        template = f"/apps/{{app_id}}/{word}/{{{param}}}" + (f"/{tail}" if tail else "")
        return Target(origin.gateway, _fill(template, values) + query,
                      ("apps", origin.remote_id, member))

    async def _member_item(self, request: web.Request, entity: Entity, collection: str,
                           item_id: str) -> tuple[str | None, str]:
        """(member app, item id on the member) an item id names; member None to answer here."""
        members = {a.id for a in self.fed.view.entities.member_apps(entity)}
        if not (collection == "data" and item_id.startswith("/")):
            member, sep, rest = item_id.partition(":")
            if sep and member in members:
                return member, rest
        return await self._resolve_bare(request, entity, collection, item_id)

    async def _resolve_bare(self, request: web.Request, entity: Entity, collection: str,
                            item_id: str) -> tuple[str | None, str]:
        """Rule 6 across the fleet: a bare id naming exactly one merged item."""
        provider = self.fed.state.registry.local_items.get(collection)
        if provider is None:
            return None, item_id
        fed = self.fed
        local = await provider(fed.state, entity)
        answers = await fed.peer_items(request, entity, collection,
                                       fed.view.peers_of(entity.kind, entity.id))
        merged = combine(collection, fed.xv, local, answers, fed.rename,
                         memo=fed.view).items
        xv = fed.xv
        members = [tuple(i[xv].get("member_ids") or ()) for i in merged]
        ids = [i["id"] for i in merged]
        try:
            if collection == "configurations":
                names = [str(i.get("name")) for i in merged]
                k = _resolve_param(item_id, names, ids)
                return ids[k].partition(":")[0] or None, names[k]
            if collection == "data":
                topics = [(i[xv].get("ros2") or {}).get("topic") or i["id"] for i in merged]
                k = resolve_topic(item_id, topics, members, ids)
                return (members[k][0] if members[k] else None), topics[k]
            paths = [i[xv][f"ros2_{i[xv]['ros2_kind']}"] for i in merged]
            k = _resolve_op(item_id, paths, members, ids)
        except ItemLookupError as exc:
            if exc.candidates:
                raise not_found(f"Item id '{item_id}' is ambiguous on {entity.type} "
                                f"'{entity.id}'; use one of: {', '.join(exc.candidates)}",
                                entity_id=entity.id, candidates=exc.candidates) from None
            return None, item_id
        return (members[k][0] if members[k] else None), paths[k].strip("/")

    async def forward(self, request: web.Request, route: Route, target: Target
                      ) -> web.StreamResponse:
        """Send the request to the peer and stream its answer back."""
        fed = self.fed
        peer = fed.table.peers.get(target.peer)
        budgets = fed.settings.budgets
        if peer is None or not peer.online:
            raise not_responding(f"Peer gateway '{target.peer}' is not answering its health "
                                 "check; the request was not forwarded", peer=target.peer)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        headers.update(fed.peer_headers(request, peer))
        headers.update(peer.client.fixed_headers)  # the caller's own never replace these
        headers["Via"] = f"1.1 {fed.settings.self_name}"
        sent = asyncio.Event()
        data: Any = None
        if request.body_exists:
            length = request.content_length
            if length is not None and length <= SMALL_BODY:
                data = _to_peer_ids(await request.read(), target)
                sent.set()
            else:
                data = _body(request, sent)
        else:
            sent.set()
        url = peer.client.api(target.path)
        started = time.monotonic()
        call = asyncio.ensure_future(peer.client.session.request(
            request.method, url, headers=headers, data=data, allow_redirects=False))
        try:
            try:
                resp = await _answer(call, sent, budgets.write_s, budgets.forward_s)
            except BaseException:
                call.cancel()
                raise
        except BudgetExceeded as exc:
            fed.table.suspect(peer.name)
            raise not_responding(
                f"Peer gateway '{peer.name}' did not answer within {exc.setting} "
                f"({exc.budget_s * 1000:.0f} ms); the request may still run there",
                peer=peer.name, budget=exc.setting) from None
        except (aiohttp.ServerTimeoutError, asyncio.TimeoutError) as exc:
            fed.table.suspect(peer.name)
            raise not_responding(
                f"Peer gateway '{peer.name}' did not accept a connection within "
                f"aggregation.timeout_ms ({budgets.timeout_s * 1000:.0f} ms)",
                peer=peer.name, budget="aggregation.timeout_ms", details=str(exc)) from None
        except (aiohttp.ClientError, OSError) as exc:
            fed.table.suspect(peer.name)
            raise vendor_error(502, "x-vendor-peer-unavailable",
                               f"Peer gateway '{peer.name}' did not answer: "
                               f"{type(exc).__name__}", peer=peer.name) from None
        # A JSON answer (headers and body, read whole to be rewritten) fits in
        # forward_timeout_ms after the request went out: a peer trickling it cannot hold the
        # forward open. A download streams: each of its chunks comes within the budget.
        streamed_body = data is not None and not isinstance(data, bytes)
        deadline = started + budgets.forward_s + (budgets.write_s if streamed_body else 0.0)
        try:
            return await self._relay(request, route, target, resp, deadline, peer)
        finally:
            resp.release()

    async def _relay(self, request: web.Request, route: Route, target: Target,
                     resp: aiohttp.ClientResponse, deadline: float, peer: Peer
                     ) -> web.StreamResponse:
        fed = self.fed
        out_headers = {k: v for k, v in resp.headers.items() if k.lower() not in RESPONSE_DROP}
        if "Location" in out_headers:
            out_headers["Location"] = rewrite_location(out_headers["Location"], target.peer, fed)
        ctype = resp.headers.get("Content-Type", "")
        streaming = route.streaming or ctype.startswith("text/event-stream")
        length = resp.content_length
        renamed = target.entity is not None and target.entity[1] != target.entity[2]
        head: list[bytes] = []
        if not streaming and rewrites_body(resp.status, resp.headers):
            # A JSON document is read whole (up to SMALL_BODY) to name the fleet's ids, before
            # any header goes out: a peer too slow to send it within the budget gets the
            # spec's 504. Anything else (a download) streams from its first byte.
            done = await _read_head(resp, head, deadline, peer)
            if done:
                body = b"".join(head)
                if renamed:
                    assert target.entity is not None
                    body = _rename_body(body, *target.entity, error=resp.status >= 400)
                body = _rename_apps(body, [
                    (remote, fleet) for (peer_name, remote), fleet in fed.view.app_ids.items()
                    if peer_name == target.peer and remote != fleet])
                return web.Response(status=resp.status, body=body, headers=out_headers)
        out = web.StreamResponse(status=resp.status, headers=out_headers)
        if length is not None:
            out.content_length = length
        await out.prepare(request)  # the status line and headers leave now
        if ctype.startswith("text/event-stream") and resp.status == 200:
            return await self._relay_events(request, target, resp, out)
        idle_s = None if streaming else fed.settings.budgets.forward_s
        if not await _pump(resp, out, head, idle_s, peer):
            # Headers are out: the only honest signal left is a cut connection (short of its
            # Content-Length, or chunked without its last chunk), never a complete-looking end.
            if request.transport is not None:
                request.transport.close()
            return out
        with contextlib.suppress(ConnectionResetError):
            await out.write_eof()
        return out

    async def _relay_events(self, request: web.Request, target: Target,
                            resp: aiohttp.ClientResponse, out: web.StreamResponse
                            ) -> web.StreamResponse:
        """Relay a peer's SSE stream frame by frame; a peer that fails mid-stream (connection
        cut, or its health check failing) ends the stream with an `error` event."""
        peer = self.fed.table.peers.get(target.peer)
        buffer = bytearray()
        read: asyncio.Future[bytes] = asyncio.ensure_future(resp.content.readany())
        reason = ""
        try:
            while True:
                done, _ = await asyncio.wait({read}, timeout=PEER_CHECK_S)
                if not done:
                    if peer is None or not peer.online or \
                            self.fed.table.peers.get(target.peer) is not peer:
                        reason = "its health check failed"
                        break
                    continue
                try:
                    chunk = read.result()
                except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
                    reason = f"the connection broke ({type(exc).__name__})"
                    break
                if not chunk:
                    break  # the peer ended the stream itself
                buffer.extend(chunk)
                end = buffer.rfind(b"\n\n")
                if end >= 0:  # whole frames only: a cut frame is never half-delivered
                    await out.write(bytes(buffer[:end + 2]))
                    del buffer[:end + 2]
                read = asyncio.ensure_future(resp.content.readany())
        except ConnectionResetError:
            return out
        finally:
            if not read.done():
                read.cancel()
        if reason:
            self.fed.table.suspect(target.peer)
            vendor = self.fed.state.vendor
            event = {"error_code": "vendor-error", "vendor_code": f"x-{vendor}-peer-unavailable",
                     "message": f"Peer gateway '{target.peer}' stopped answering: {reason}; "
                                "the stream ends here (create the subscription again once "
                                "the peer is back)",
                     "parameters": {"peer": target.peer}}
            with contextlib.suppress(ConnectionResetError):
                await out.write(b"event: error\ndata: " + orjson.dumps(event) + b"\n\n")
        with contextlib.suppress(ConnectionResetError):
            await out.write_eof()
        return out


def _to_peer_ids(body: bytes, target: Target) -> bytes:
    """A request body's resource URIs of a renamed entity in the peer's own ids (a trigger or
    subscription names its observed resource by path)."""
    if target.entity is None or target.entity[1] == target.entity[2]:
        return body
    kind, remote_id, fleet_id = target.entity
    return body.replace(f"{API_PREFIX}/{kind}/{fleet_id}/".encode(),
                        f"{API_PREFIX}/{kind}/{remote_id}/".encode())


def _rename_body(body: bytes, kind: str, remote_id: str, fleet_id: str,
                 error: bool = False) -> bytes:
    """Entity hrefs and ids of a peer's JSON body in fleet ids (`entity_id`; for an app also
    `app_id` and `id`, as status and lifecycle answers name it; in an error's text the id as
    its messages quote it, `'<id>'`)."""
    old = f"{API_PREFIX}/{kind}/{remote_id}".encode()
    new = f"{API_PREFIX}/{kind}/{fleet_id}".encode()
    for end in (b"/", b'"', b"?"):
        body = body.replace(old + end, new + end)
    keys = (b"entity_id", b"app_id", b"id") if kind == "apps" else (b"entity_id",)
    for key in keys:
        body = body.replace(b'"' + key + b'":"' + remote_id.encode() + b'"',
                            b'"' + key + b'":"' + fleet_id.encode() + b'"')
    if error:
        body = body.replace(b"'" + remote_id.encode() + b"'", b"'" + fleet_id.encode() + b"'")
    return body


def _rename_apps(body: bytes, renames: list[tuple[str, str]]) -> bytes:
    """The peer's apps that carry another id in the fleet, by their fleet ids wherever a body
    names them (`app_id` values and app hrefs, e.g. the records of a lifecycle answer)."""
    for remote_id, fleet_id in renames:
        old = f"{API_PREFIX}/apps/{remote_id}".encode()
        new = f"{API_PREFIX}/apps/{fleet_id}".encode()
        for end in (b"/", b'"', b"?"):
            body = body.replace(old + end, new + end)
        body = body.replace(b'"app_id":"' + remote_id.encode() + b'"',
                            b'"app_id":"' + fleet_id.encode() + b'"')
    return body


def _resolve_param(requested: str, names: list[str], ids: list[str]) -> int:
    matches = [k for k, (n, i) in enumerate(zip(names, ids, strict=True))
               if i == requested or n == requested]
    if len(matches) == 1:
        return matches[0]
    raise ItemLookupError(requested, [ids[k] for k in matches])


def _resolve_op(requested: str, paths: list[str], members: list[tuple[str, ...]],
                ids: list[str]) -> int:
    items = [MemberItem(m[0] if m else "", p) for m, p in zip(members, paths, strict=True)]
    return resolve(requested, items, ids)


def rewrites_body(status: int, headers: Mapping[str, str]) -> bool:
    """True when a peer's answer is a JSON document whose body names the fleet's ids (read
    whole, then rewritten); False for a download (a file, a range), which streams as is."""
    if not headers.get("Content-Type", "").startswith("application/json"):
        return False
    return status != 206 and "Content-Disposition" not in headers \
        and "Content-Range" not in headers


async def _pump(resp: aiohttp.ClientResponse, out: web.StreamResponse, head: list[bytes],
                idle_s: float | None, peer: Peer) -> bool:
    """Relay the peer's body chunk by chunk as it comes; True when it ended complete.

    At most a chunk is held here: the next read waits until the client took the last one
    (`write` waits for the socket to drain), and aiohttp stops reading the peer's socket once
    its own buffer is full, so the peer is read no faster than the client drains. idle_s
    bounds the wait for each chunk (None: none, an event stream)."""
    try:
        for chunk in head:
            await out.write(chunk)
        while True:
            chunk = await asyncio.wait_for(resp.content.read(CHUNK), idle_s)
            if not chunk:
                return True
            peer.last_bytes = time.monotonic()  # the peer answers (peers.py _timed_out)
            await out.write(chunk)
    except (asyncio.TimeoutError, aiohttp.ClientError, OSError, RuntimeError) as exc:
        # ClientPayloadError: the peer's connection ended short of its Content-Length or
        # last chunk; RuntimeError("Connection closed."): aiohttp's, when the connection went
        # while a read waited (a robot's tunnel closing); ConnectionResetError: the client
        # went away.
        log.warning("forward from %s cut mid-body: %s", peer.name, type(exc).__name__)
        return False


async def _read_head(resp: aiohttp.ClientResponse, head: list[bytes], deadline: float,
                     peer: Peer) -> bool:
    """Read up to SMALL_BODY of the answer into head by the deadline; True when complete."""
    name = peer.name
    size = 0
    while size <= SMALL_BODY:
        left = deadline - time.monotonic()
        try:
            if left <= 0:
                raise asyncio.TimeoutError
            chunk = await asyncio.wait_for(resp.content.read(CHUNK), left)
        except asyncio.TimeoutError:
            raise not_responding(
                f"Peer gateway '{name}' did not send its whole answer within "
                "aggregation.forward_timeout_ms; the request may still run there",
                peer=name, budget="aggregation.forward_timeout_ms") from None
        except (aiohttp.ClientError, OSError, RuntimeError) as exc:
            raise vendor_error(502, "x-vendor-peer-unavailable",
                               f"Peer gateway '{name}' broke off its answer: "
                               f"{type(exc).__name__}", peer=name) from None
        if not chunk:
            return True
        peer.last_bytes = time.monotonic()  # the peer answers (peers.py _timed_out)
        head.append(chunk)
        size += len(chunk)
    return False


async def _body(request: web.Request, sent: asyncio.Event) -> AsyncIterator[bytes]:
    async for chunk in request.content.iter_chunked(CHUNK):
        yield chunk
    sent.set()


async def _answer(call: asyncio.Future[aiohttp.ClientResponse], sent: asyncio.Event,
                  write_s: float, read_s: float) -> aiohttp.ClientResponse:
    """The peer's response; BudgetExceeded when a budget ran out."""
    if not sent.is_set():
        waiter: asyncio.Future[Any] = asyncio.ensure_future(sent.wait())
        try:
            first, _ = await asyncio.wait({call, waiter}, timeout=write_s,
                                          return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        if call in first:
            return call.result()
        if not sent.is_set():
            raise BudgetExceeded("aggregation.write_timeout_ms", write_s)
    done, _ = await asyncio.wait({call}, timeout=read_s)
    if call in done:
        return call.result()
    raise BudgetExceeded("aggregation.forward_timeout_ms", read_s)

