"""`GET /x-vendor-connect`: a robot the primary cannot reach joins it over its own connection.

The robot (connect_out.py) opens a WebSocket here, naming itself and presenting its connect
token (connect_auth.py: its own token, listed or issued by this primary, proves its name; the
shared one, when accepted, names no one and never takes a proved robot's name). The primary
then listens on a loopback port for that robot and adds it as a peer at
`http://127.0.0.1:<port>`: each connection to that port that presents the tunnel's secret is
tunneled to the robot's gateway (tunnel.py), so reads, forwarding, relays and the beacon work
as with any peer. When the WebSocket closes its port goes, and a robot that had declared its
entities stays listed as an offline peer (its last set, apps `is_online: false`) until it
connects again under its name or `aggregation.connect_hold_ms` passes (PeerTable.hold); one
that never did is removed at once.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from typing import Any

from aiohttp import web

from ..auth.enforce import unauthorized
from ..errors import ApiError, invalid_parameter, not_implemented
from ..http.state import state_of
from .connect_auth import SHARED, ConnectGate, Refused, admit, retry_after
from .service import FEDERATION
from .settings import LOCAL, peer_name
from .tunnel import Mux

log = logging.getLogger(__name__)

HEARTBEAT_S = 10.0  # WebSocket pings: a vanished robot's tunnel closes within ~2 of these


def _refuse(name: str, remote: str, exc: Refused) -> ApiError:
    """The refusal as the spec's error body, logged in one line."""
    log.warning("robot connection %r from %s refused (%d): %s", name, remote, exc.status,
                exc.message)
    if exc.status == 429:
        after = retry_after(exc.retry_after_s)
        return ApiError(429, "vendor-error", exc.message,
                        vendor_code="x-vendor-rate-limit-exceeded",
                        parameters={"status": 429, "name": name},
                        headers={"Retry-After": after})
    return ApiError(exc.status, exc.code, exc.message, parameters={"name": name})


def _checked(request: web.Request, gate: ConnectGate, vendor: str) -> tuple[str, str]:
    """(name, proof) of a connect request; ApiError when it is refused."""
    remote = request.remote or "?"
    raw = request.query.get("name", "")
    wait = gate.limiter.take(remote, time.monotonic())
    if wait:
        raise _refuse(raw, remote, Refused(
            429, "vendor-error", f"too many connect attempts from {remote} (aggregation."
            f"connect_attempts_per_minute); robot {raw!r} may retry in {retry_after(wait)} s",
            wait))
    name = peer_name(raw)
    if not raw or name != raw or name == LOCAL or "__" in name:
        log.warning("robot connection %r from %s refused (400): not a peer name", raw, remote)
        raise invalid_parameter("name must be letters, digits, '_' or '-' (not 'local', "
                                "no '__')", name=raw)
    given = request.headers.get(f"X-{vendor}-Connect-Token", "")
    proof = gate.credentials.proof(name, given)
    if proof is None:
        log.warning("robot connection %r from %s refused (401): wrong connect token", name,
                    remote)
        raise unauthorized(f"X-{vendor}-Connect-Token is not robot {name!r}'s own token "
                           "(issued by this primary: diag-gateway robot-token) nor an accepted "
                           "aggregation.connect_token")
    return name, proof


async def connect(request: web.Request) -> web.StreamResponse:
    """A robot's tunnel (WebSocket); it stays a peer while the connection lasts."""
    state = state_of(request)
    service = request.app.get(FEDERATION)
    gate: ConnectGate | None = getattr(service, "connect_gate", None)
    if service is None or gate is None or not gate.credentials.enabled:
        raise not_implemented("aggregation", "this gateway accepts no robot connections: set "
                              "aggregation.enabled and issue robots their tokens "
                              "(diag-gateway robot-token NAME, or "
                              "aggregation.connect_robots)")
    vendor = state.vendor.capitalize()
    name, proof = _checked(request, gate, vendor)
    remote = request.remote or "?"
    held = service.table.held(name)  # this robot, listed offline since its tunnel closed
    other_peer = name in service.table.peers and not gate.owner.get(name) and held is None
    try:
        admit(name, proof, gate.live, other_peer, gate.cap,
              held.held_proof if held is not None else None)
    except Refused as exc:
        raise _refuse(name, remote, exc) from None
    ws = web.WebSocketResponse(heartbeat=HEARTBEAT_S, max_msg_size=1 << 20)
    gate.claim(name, proof, ws)  # before any wait: a concurrent connection sees the name held
    server: asyncio.Server | None = None
    try:
        old = service.tunnels.pop(name, None)
        if old is not None:  # the robot reconnected before its old tunnel was noticed dead
            log.info("robot %s from %s replaces its previous tunnel (own token)", name, remote)
            await old.close()
        await ws.prepare(request)
        if not gate.holds(name, ws):  # replaced by the robot's own newer connection meanwhile
            await ws.close()
            return ws
        header, secret = f"X-{vendor}-Tunnel-Secret", secrets.token_urlsafe(32)
        mux = Mux(ws, guard=(header, secret))
        server = await asyncio.start_server(mux.accept, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        service.tunnels[name] = ws
        service.table.add(name, f"http://127.0.0.1:{port}", discovered=False,
                          fixed_headers={header: secret})
        if proof == SHARED:
            log.warning("robot %s connected from %s with the shared aggregation.connect_token "
                        "or a token derived from it (it proves no name; issue it its own: "
                        "diag-gateway robot-token %s)", name, remote, name)
        log.info("robot %s connected from %s: peer through the tunnel at 127.0.0.1:%d", name,
                 remote, port)
        await mux.run()
    finally:
        if server is not None:
            server.close()
        if gate.release(name, ws):
            if service.tunnels.get(name) is ws:
                del service.tunnels[name]
            await _hold(service, name, proof, gate.cap)
    return ws


async def _hold(service: Any, name: str, proof: str, cap: int) -> None:
    """A robot's tunnel closed: listed offline for aggregation.connect_hold_ms if it had
    joined the fleet view (declared its entities), else removed."""
    hold_s = service.settings.connect_hold_s
    peer = service.table.peers.get(name)
    if hold_s <= 0 or peer is None or peer.entities is None:
        await service.table.remove(name)
        log.info("robot %s disconnected", name)
        return
    await service.table.hold(name, time.monotonic() + hold_s, proof, cap)
    log.info("robot %s disconnected: listed offline until it connects again, for at most "
             "%.0f s (aggregation.connect_hold_ms)", name, hold_s)
