"""A robot joins a primary it can reach but that cannot reach it (NAT, cellular links).

With `aggregation.connect_to` set, the robot's gateway keeps one WebSocket open to the
primary's `/x-vendor-connect` (connect_in.py), named `aggregation.mdns_name` (default: the host
name) and authenticated by its own `aggregation.connect_robot_token` (issued by the primary:
`diag-gateway robot-token NAME` there; or, for primaries that still accept it, the shared
`aggregation.connect_token`, which proves no name), and `aggregation.peer_auth_header`
when the primary requires tokens. Every stream the primary opens over it is connected to
this gateway's own port (tunnel.py). A lost connection is opened again with backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from urllib.parse import quote, urlsplit

import aiohttp

from ..http.state import GatewayState
from ..process.settings import ServerSettings
from ..settings.config import ConfigError
from .settings import AggregationSettings, FederationSettings
from .tunnel import Mux

log = logging.getLogger(__name__)

BACKOFF_S = (0.5, 1.0, 2.0, 5.0)
HEARTBEAT_S = 10.0


class ConnectOut:
    """The robot's end: the WebSocket to the primary, kept open."""

    def __init__(self, state: GatewayState) -> None:
        s = state.settings
        a = s.typed(AggregationSettings.from_settings)
        self.url = a.connect_to.rstrip("/")
        self.name = s.typed(FederationSettings.from_settings).self_name
        vendor = state.vendor.capitalize()
        token = a.connect_robot_token or a.connect_token
        self.headers = {f"X-{vendor}-Connect-Token": token}
        if a.peer_auth_header:
            self.headers["Authorization"] = a.peer_auth_header
        srv = s.typed(ServerSettings.from_settings)
        host = srv.host
        self.target = ("127.0.0.1" if host in ("", "0.0.0.0", "::") else host, srv.port)
        self.path = f"/api/v1/x-{state.vendor}-connect?name={quote(self.name, safe='')}"
        self.connected = False
        self.task: asyncio.Task[None] | None = None

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(*self.target)

    async def run(self) -> None:
        """Connect, serve the tunnel, reconnect with backoff; forever."""
        failures = 0
        async with aiohttp.ClientSession() as session:
            while True:
                try:
                    async with session.ws_connect(
                            self.url + self.path, headers=self.headers, heartbeat=HEARTBEAT_S,
                            max_msg_size=1 << 20,
                            timeout=aiohttp.ClientWSTimeout(ws_close=5.0)) as ws:
                        log.info("connected to primary %s as %s", self.url, self.name)
                        self.connected, failures = True, 0
                        await Mux(ws, self._open).run()
                    log.info("connection to primary %s closed", self.url)
                except aiohttp.WSServerHandshakeError as exc:
                    failures += 1
                    log.warning("primary %s refused the connection: %s %s", self.url,
                                exc.status, exc.message)
                except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
                    failures += 1
                    log.info("primary %s not reached: %r", self.url, exc)
                self.connected = False
                await asyncio.sleep(BACKOFF_S[min(failures, len(BACKOFF_S) - 1)])

    def start(self) -> None:
        """Keep connected while the gateway runs (a task on the running loop)."""
        self.task = asyncio.get_running_loop().create_task(self.run(), name="connect-out")

    async def stop(self) -> None:
        """Close the connection and stop reconnecting."""
        task, self.task = self.task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def connect_out(state: GatewayState) -> ConnectOut | None:
    """The robot's connection to aggregation.connect_to (None when unset); ConfigError on a
    URL or token it cannot use."""
    a = state.settings.typed(AggregationSettings.from_settings)
    url = a.connect_to
    if not url:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"setting 'aggregation.connect_to': {url!r} is not an http(s) URL "
                          "of the primary (e.g. https://fleet.example.com:8443)")
    if parts.scheme == "http" and a.require_tls:
        raise ConfigError(f"setting 'aggregation.require_tls': {url!r} is not https://")
    if not a.connect_robot_token:
        if not a.connect_token:
            raise ConfigError("setting 'aggregation.connect_robot_token' (this robot's own "
                              "token) must be set with aggregation.connect_to")
        log.warning("setting 'aggregation.connect_robot_token' is empty: connecting to %s with "
                    "the shared aggregation.connect_token, which proves no robot name (the "
                    "primary refuses it once connect_accept_shared is false; ask its operator "
                    "for this robot's own token, diag-gateway robot-token; docs/security.md)",
                    url)
    return ConnectOut(state)
