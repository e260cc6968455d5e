"""`GET /x-vendor-entities`: this gateway's local entity set in one body, for its primary
(and `GET /x-vendor-fleet-proof`: its proof of aggregation.fleet_secret, fleet_proof.py).

Served by every gateway (a robot's gateway needs no aggregation setting to be a peer). The
ETag changes only with the local discovery generation, so a primary's conditional refresh
of an unchanged peer costs one request answered 304 with no body.
"""

from __future__ import annotations

from aiohttp import web

from ..errors import invalid_parameter, not_found
from ..http.jsonutil import dumps
from ..http.routes import Registry
from ..http.state import state_of
from .beacon import beacon_stream
from .connect_in import connect
from .fleet_proof import NONCE_BYTES, own_name, proof, valid_nonce
from .service import FEDERATION
from .settings import AggregationSettings
from .sites import declared
from .wire import dump, etag


async def entity_declaration(request: web.Request) -> web.Response:
    """The local entity set (areas, components, apps, functions); 304 when unchanged."""
    state = state_of(request)
    cache = state.cache
    entities, generation = declared(state)  # a site primary declares its whole site
    tag = etag(state.started_ns, generation)
    headers = {"ETag": tag, "Cache-Control": "no-cache"}
    if tag in (t.strip() for t in request.headers.get("If-None-Match", "").split(",")):
        return web.Response(status=304, headers=headers)
    fed = request.app.get(FEDERATION)
    name = fed.settings.self_name if fed is not None else ""
    body = cache.body(("declaration", entities is cache.local, generation),
                      lambda: dumps(dump(entities, name, generation)))
    return web.Response(body=body, content_type="application/json", headers=headers)


async def fleet_proof(request: web.Request) -> web.Response:
    """This gateway's proof for the nonce; 404 without aggregation.fleet_secret."""
    settings = state_of(request).settings
    secret = settings.typed(AggregationSettings.from_settings).fleet_secret
    if not secret:
        raise not_found("no fleet secret is set on this gateway")
    nonce = request.query.get("nonce", "")
    if not valid_nonce(nonce):
        raise invalid_parameter(f"nonce: {2 * NONCE_BYTES} hex digits expected",
                                parameter="nonce")
    body = {"proof": proof(secret, nonce, own_name(settings))}
    return web.Response(body=dumps(body), content_type="application/json",
                        headers={"Cache-Control": "no-store"})


def register(reg: Registry) -> None:
    """Declare the federation routes (entity declaration, beacon, connect, fleet proof)."""
    reg.add("GET", "/x-vendor-entities", entity_declaration, tag="discovery",
            response="Object", summary="This gateway's local entity set (peer refresh)")
    reg.add("GET", "/x-vendor-beacon", beacon_stream, tag="discovery", streaming=True,
            response="BeaconEvent",
            summary="A primary's liveness and entity ETag stream (one line per interval)")
    reg.add("GET", "/x-vendor-connect", connect, tag="discovery", streaming=True,
            response="Object", feature="aggregation",
            summary="A robot's tunnel to this primary (WebSocket; its own robot token)")
    # A GET like /health and the entity declaration, which a primary reads from an mDNS
    # peer without a token too: open unless auth.require_auth_for is `all`.
    reg.add("GET", "/x-vendor-fleet-proof", fleet_proof, tag="discovery", response="Object",
            summary="Proof of aggregation.fleet_secret for a primary's nonce (404: none set)")
