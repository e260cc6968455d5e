"""Aggregation settings: the `aggregation.*` keys, and the federation's budgets in seconds,
static peers and mDNS options built from them."""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..settings.config import ConfigError
from ..settings.typed import TableSettings
from ..wire.settings import ApiSettings

if TYPE_CHECKING:
    from ..settings.config import Settings

# Health checks cap the connect and read budgets at this (spec: Limits, aggregation.timeout_ms).
HEALTH_CAP_S = 1.0
LOCAL = "local"
FLEET_SECRET_MIN = 16
_NAME = re.compile(r"[^A-Za-z0-9_-]+")


def peer_name(text: str) -> str:
    """A peer name usable in `<peer>__<id>`: alphanumerics, underscore and hyphen."""
    out = _NAME.sub("_", text.strip()).strip("_")
    return out or "peer"


@dataclass(frozen=True)
class AggregationSettings(TableSettings):
    """The `aggregation.*` settings as the table holds them (docs/federation.md)."""

    PREFIX = "aggregation."

    enabled: bool
    timeout_ms: int
    forward_timeout_ms: int
    write_timeout_ms: int
    peer_urls: tuple[str, ...]
    peer_names: tuple[str, ...]
    announce: bool
    discover: bool
    mdns_service: str
    mdns_name: str
    mdns_interfaces: tuple[str, ...]
    announce_port: int
    max_discovered_peers: int
    max_discovered_per_address: int
    health_interval_ms: int
    refresh_interval_ms: int
    connect_to: str
    connect_token: str = field(repr=False)
    connect_token_file: str
    connect_robot_secret: str = field(repr=False)
    connect_robot_secret_file: str
    connect_robot_token: str = field(repr=False)
    connect_robot_token_file: str
    connect_robots: tuple[str, ...] = field(repr=False)
    connect_robots_file: str
    connect_accept_shared: bool
    max_connected_robots: int
    connect_hold_ms: int
    connect_attempts_per_minute: int
    reexport: bool
    beacon: bool
    max_response_bytes: int
    forward_auth: bool
    peer_auth_header: str = field(repr=False)
    peer_auth_header_file: str
    require_tls: bool
    peer_scheme: str
    fleet_secret: str = field(repr=False)
    fleet_secret_file: str
    cache_enabled: bool
    cache_max_age_ms: int


@dataclass(frozen=True)
class Budgets:
    """Time budgets of peer calls, in seconds."""

    timeout_s: float = 2.0
    forward_s: float = 15.0
    write_s: float = 5.0

    @property
    def health_s(self) -> float:
        """Connect and read budget of a health check."""
        return min(self.timeout_s, HEALTH_CAP_S)


def budgets(timeout_ms: int, forward_ms: int, write_ms: int,
            warnings: list[str] | None = None) -> Budgets:
    """Budgets from (already range-clamped) milliseconds; forward is raised to timeout."""
    if forward_ms < timeout_ms:
        if warnings is not None:
            warnings.append(f"setting 'aggregation.forward_timeout_ms': {forward_ms} is below "
                            f"aggregation.timeout_ms; using {timeout_ms}")
        forward_ms = timeout_ms
    return Budgets(timeout_ms / 1000.0, forward_ms / 1000.0, write_ms / 1000.0)


@dataclass(frozen=True)
class StaticPeer:
    """A configured peer."""

    name: str
    url: str


def static_peers(urls: Any, names: Any) -> list[StaticPeer]:
    """Pairs of aggregation.peer_urls and peer_names; ConfigError naming the setting."""
    urls = [str(u).strip() for u in (urls or ())]
    names = [str(n).strip() for n in (names or ())]
    if len(urls) != len(names):
        raise ConfigError(f"settings 'aggregation.peer_urls' ({len(urls)} entries) and "
                          f"'aggregation.peer_names' ({len(names)}) must have equal lengths")
    out: list[StaticPeer] = []
    seen: set[str] = set()
    for url, name in zip(urls, names, strict=True):
        if not url and not name:
            continue  # empty entries are ignored
        if not url:
            raise ConfigError(f"setting 'aggregation.peer_urls': peer '{name}' has no URL")
        if not name:
            parts = urlsplit(url)
            name = f"{parts.hostname or 'peer'}_{parts.port or ''}"
        clean = peer_name(name)
        if clean != name:
            raise ConfigError(f"setting 'aggregation.peer_names': {name!r} may hold only "
                              "letters, digits, '_' and '-'")
        if clean == LOCAL or "__" in clean:
            raise ConfigError(f"setting 'aggregation.peer_names': {name!r} is reserved or "
                              "contains '__'")
        if clean in seen:
            raise ConfigError(f"setting 'aggregation.peer_names': {name!r} is not unique")
        seen.add(clean)
        out.append(StaticPeer(clean, url.rstrip("/")))
    return out


@dataclass(frozen=True)
class MdnsOptions:
    """mDNS announce and browse options."""

    announce: bool = False
    discover: bool = False
    service: str = "_diag-gateway._tcp.local."
    name: str = ""
    interfaces: tuple[str, ...] = ("127.0.0.1",)
    max_peers: int = 50
    max_per_address: int = 16  # discovered peers announced at one host address
    scheme: str = "http"
    announce_port: int = 0  # the port peers connect to (0: the gateway's own)
    # aggregation.fleet_secret: a peer found by mDNS is used once it proved it (fleet_proof.py)
    fleet_secret: str = field(default="", repr=False)
    vendor: str = "vendor"  # the vendor word of the peers' routes
    timeout_s: float = 2.0  # budget of one proof challenge (aggregation.timeout_ms)


def service_type(text: str) -> str:
    """A fully qualified mDNS service type (`_x._tcp.local.`)."""
    text = text.strip()
    if not text.endswith("."):
        text += "."
    if not text.endswith(".local."):
        text = text[:-1] + ".local."
    return text


@dataclass(frozen=True)
class FederationSettings:
    """Everything the federation service reads from the settings."""

    enabled: bool = False
    budgets: Budgets = field(default_factory=Budgets)
    peers: tuple[StaticPeer, ...] = ()
    mdns: MdnsOptions = field(default_factory=MdnsOptions)
    health_interval_s: float = 0.5
    refresh_interval_s: float = 1.0
    max_response_bytes: int = 16 * 1024 * 1024
    beacon: bool = True  # idle peers' liveness and ETag from their beacon stream (beacon.py)
    reexport: bool = False  # a site primary: its peers' entities served on to a fleet primary
    # aggregation.connect_hold_ms: a robot's closed tunnel leaves it listed offline this long
    connect_hold_s: float = 3600.0
    self_name: str = ""
    warnings: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, s: Settings) -> FederationSettings:
        """From the resolved gateway settings (ConfigError for unusable peers)."""
        a = s.typed(AggregationSettings.from_settings)
        warnings: list[str] = []
        b = budgets(a.timeout_ms, a.forward_timeout_ms, a.write_timeout_ms, warnings)
        name = a.mdns_name or socket.gethostname()
        mdns = MdnsOptions(
            announce=a.announce, discover=a.discover, service=service_type(a.mdns_service),
            name=peer_name(name), interfaces=a.mdns_interfaces,
            max_peers=a.max_discovered_peers, max_per_address=a.max_discovered_per_address,
            scheme=a.peer_scheme, announce_port=a.announce_port, fleet_secret=a.fleet_secret,
            vendor=s.typed(ApiSettings.from_settings).vendor, timeout_s=b.timeout_s)
        if mdns.fleet_secret and len(mdns.fleet_secret) < FLEET_SECRET_MIN:
            warnings.append(f"setting 'aggregation.fleet_secret': shorter than "
                            f"{FLEET_SECRET_MIN} characters; use a long random secret")
        return cls(
            enabled=a.enabled, budgets=b, peers=tuple(static_peers(a.peer_urls, a.peer_names)),
            mdns=mdns, health_interval_s=a.health_interval_ms / 1000.0,
            refresh_interval_s=a.refresh_interval_ms / 1000.0,
            max_response_bytes=a.max_response_bytes, beacon=a.beacon, reexport=a.reexport,
            connect_hold_s=a.connect_hold_ms / 1000.0, self_name=peer_name(name),
            warnings=tuple(warnings))
