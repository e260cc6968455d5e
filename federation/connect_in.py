"""`GET /x-vendor-connect`: a robot the primary cannot reach joins it over its own connection.

The robot (connect_out.py) opens a WebSocket here, naming itself and presenting the shared
`aggregation.connect_token`. The primary then listens on a loopback port for that robot and
adds it as a peer at `http://127.0.0.1:<port>`: each connection to that port is tunneled to the
robot's gateway (tunnel.py), so reads, forwarding, relays and the beacon work as with any
peer. When the WebSocket closes the peer is removed with its port.
"""

from __future__ import annotations

import asyncio
import hmac
import logging

from aiohttp import web

from gateway.auth.enforce import unauthorized
from gateway.http.errors import ApiError, invalid_parameter, not_implemented
from gateway.state import state_of

from .settings import LOCAL, peer_name
from .tunnel import Mux

log = logging.getLogger(__name__)

HEARTBEAT_S = 10.0  # WebSocket pings: a vanished robot's tunnel closes within ~2 of these


async def connect(request: web.Request) -> web.StreamResponse:
    """A robot's tunnel (WebSocket); it stays a peer while the connection lasts."""
    state = state_of(request)
    service = state.federation
    token = state.settings["aggregation.connect_token"]
    if service is None or not token:
        raise not_implemented("aggregation", "this gateway accepts no robot connections: set "
                              "aggregation.enabled and aggregation.connect_token")
    vendor = state.vendor.capitalize()
    given = request.headers.get(f"X-{vendor}-Connect-Token", "")
    if not hmac.compare_digest(given.encode(), str(token).encode()):
        raise unauthorized(f"X-{vendor}-Connect-Token does not match aggregation.connect_token")
    raw = request.query.get("name", "")
    name = peer_name(raw)
    if not raw or name != raw or name == LOCAL or "__" in name:
        raise invalid_parameter("name must be letters, digits, '_' or '-' (not 'local', "
                                "no '__')", name=raw)
    known = service.table.peers.get(name)
    if known is not None and name not in service.tunnels:
        raise ApiError(409, "invalid-request", f"a peer named {name!r} exists already",
                       parameters={"name": name})
    old = service.tunnels.pop(name, None)
    if old is not None:  # the robot reconnected before its old tunnel was noticed dead
        await old.close()
    ws = web.WebSocketResponse(heartbeat=HEARTBEAT_S, max_msg_size=1 << 20)
    await ws.prepare(request)
    mux = Mux(ws)
    server = await asyncio.start_server(mux.accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    service.tunnels[name] = ws
    service.table.add(name, f"http://127.0.0.1:{port}", discovered=False)
    log.info("robot %s connected from %s: peer through the tunnel at 127.0.0.1:%d", name,
             request.remote, port)
    try:
        await mux.run()
    finally:
        server.close()
        if service.tunnels.get(name) is ws:
            del service.tunnels[name]
            await service.table.remove(name)
        log.info("robot %s disconnected", name)
    return ws
