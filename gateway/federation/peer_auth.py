"""Which credential goes on a call to a peer gateway, and which peer URLs are acceptable.

Rules of the spec's Authentication part: with `aggregation.forward_auth` the caller's own
Authorization goes to the peer and wins over `aggregation.peer_auth_header`; the gateway's own
credential (`peer_auth_header`) goes on its own calls (health check, entity fetch, fault-stream
relay) and on forwards that carry no caller credential, but never to a peer found through
mDNS; `aggregation.require_tls` refuses http:// peers at startup and at discovery.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..settings.config import ConfigError
from .settings import AggregationSettings

if TYPE_CHECKING:
    from ..settings.config import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PeerAuth:
    """The peer credential settings."""

    forward_auth: bool = False
    peer_auth_header: str = ""
    require_tls: bool = False

    @classmethod
    def from_settings(cls, settings: Settings) -> PeerAuth:
        """From aggregation.forward_auth, .peer_auth_header and .require_tls."""
        a = settings.typed(AggregationSettings.from_settings)
        return cls(a.forward_auth, a.peer_auth_header, a.require_tls)

    def authorization(self, *, caller: str | None, discovered: bool) -> str | None:
        """The Authorization value for one peer call, or None for none.

        `caller` is the caller's Authorization header (None on the gateway's own calls);
        `discovered` is true for peers found through mDNS.
        """
        if caller and self.forward_auth:
            return caller
        if self.peer_auth_header and not discovered:
            return self.peer_auth_header
        return None


def url_allowed(url: str, require_tls: bool) -> bool:
    """Whether a peer base URL may be used: https always, http only without require_tls."""
    scheme = urlsplit(url.strip()).scheme.lower()
    return scheme == "https" or (scheme == "http" and not require_tls)


def check_peer_urls(urls: Iterable[str], require_tls: bool) -> None:
    """At startup: ConfigError naming the setting for a peer URL that may not be used."""
    for url in urls:
        if not url or not url.strip():
            continue
        scheme = urlsplit(url.strip()).scheme.lower()
        if scheme not in ("http", "https"):
            raise ConfigError(f"setting 'aggregation.peer_urls': {url!r} is not an http:// or "
                              "https:// URL")
        if not url_allowed(url, require_tls):
            raise ConfigError(f"setting 'aggregation.require_tls': peer {url!r} is not https://")


def check_settings(settings: Settings) -> None:
    """Startup checks of the peer settings (configured URLs and the mDNS scheme)."""
    a = settings.typed(AggregationSettings.from_settings)
    check_peer_urls(a.peer_urls, a.require_tls)
    if a.require_tls and a.discover and a.peer_scheme != "https":
        raise ConfigError("setting 'aggregation.require_tls': true needs "
                          "aggregation.peer_scheme https, or every mDNS-found peer is refused")


def discovered_peer_allowed(url: str, require_tls: bool) -> bool:
    """At discovery: False (logged) for a peer that require_tls refuses."""
    if url_allowed(url, require_tls):
        return True
    log.warning("peer %s refused: setting 'aggregation.require_tls' needs https://", url)
    return False
