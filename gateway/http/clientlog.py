"""Rate-limited one-line warnings about clients' malformed requests (no tracebacks)."""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass

log = logging.getLogger("gateway.http.client")

WINDOW_S = 60.0
MAX_CLIENTS = 1024  # client windows kept (oldest dropped)


@dataclass
class _Window:
    start: float
    logged: int = 0
    dropped: int = 0


class ClientLogLimiter:
    """At most `per_minute` lines per client and minute; counts what it suppressed."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._windows: OrderedDict[str, _Window] = OrderedDict()

    def allow(self, client: str, now: float) -> tuple[bool, int]:
        """(log this line?, lines suppressed in the client's previous minute)."""
        window = self._windows.pop(client, None)
        carried = 0
        if window is None or now - window.start >= WINDOW_S:
            carried = window.dropped if window is not None else 0
            window = _Window(now)
        self._windows[client] = window
        if len(self._windows) > MAX_CLIENTS:
            self._windows.popitem(last=False)
        if window.logged >= self.per_minute:
            window.dropped += 1
            return False, 0
        window.logged += 1
        return True, carried


LIMITER = ClientLogLimiter(10)


def client_warning(client: str | None, text: str, now: float) -> None:
    """One WARNING line about a malformed request from client, unless it floods."""
    ok, dropped = LIMITER.allow(client or "?", now)
    if ok:
        more = f" ({dropped} similar lines from this client suppressed)" if dropped else ""
        log.warning("Malformed request from %s: %s%s", client or "?", text[:300], more)
