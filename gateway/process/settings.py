"""The server process's settings (`server.*`, `state_dir`), read once into frozen dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..settings.typed import TableSettings


@dataclass(frozen=True)
class ServerSettings(TableSettings):
    """The `server.*` settings: the HTTP server, TLS, and the process tuning of the event loop."""

    PREFIX = "server."

    host: str
    port: int
    executor_threads: int
    max_uri_length: int
    tls_enabled: bool
    tls_cert_file: str
    tls_key_file: str = field(repr=False)
    tls_min_version: str
    tls_client_ca_file: str
    tls_client_auth: str
    shutdown_grace_sec: float
    client_error_log_per_minute: int
    max_json_body_bytes: int
    loop_slice_us: int
    event_loop: str
    hot_wire: bool
    gc_freeze: bool
    gc_young_threshold: int
    malloc_arenas: int


@dataclass(frozen=True)
class ProcessSettings(TableSettings):
    """The state directory (`state_dir`; empty: ~/.local/state/diag-gateway)."""

    PREFIX = ""

    state_dir: str
