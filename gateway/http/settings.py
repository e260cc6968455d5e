"""The HTTP layer's settings (`cors.*`, `rate_limiting.*`, `sse.*`, `docs.*`), read once."""

from __future__ import annotations

from dataclasses import dataclass

from ..settings.typed import TableSettings


@dataclass(frozen=True)
class CorsSettings(TableSettings):
    """The `cors.*` settings."""

    PREFIX = "cors."

    allowed_origins: tuple[str, ...]
    allowed_methods: tuple[str, ...]
    allowed_headers: tuple[str, ...]
    allow_credentials: bool
    max_age_seconds: int


@dataclass(frozen=True)
class RateLimitSettings(TableSettings):
    """The `rate_limiting.*` settings."""

    PREFIX = "rate_limiting."

    enabled: bool
    global_requests_per_minute: int
    client_requests_per_minute: int
    endpoint_limits: tuple[str, ...]
    max_tracked_clients: int


@dataclass(frozen=True)
class SseSettings(TableSettings):
    """The `sse.*` settings: stream slots, queues, keep-alives and cyclic subscription caps."""

    PREFIX = "sse."

    max_clients: int
    max_subscriptions: int
    max_duration_sec: int
    keepalive_sec: float
    client_queue_size: int


@dataclass(frozen=True)
class DocsSettings(TableSettings):
    """The `docs.*` settings."""

    PREFIX = "docs."

    enabled: bool
