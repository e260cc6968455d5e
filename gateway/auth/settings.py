"""The token settings (`auth.*`), read once into a frozen dataclass."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..settings.typed import TableSettings


@dataclass(frozen=True)
class AuthSettings(TableSettings):
    """The `auth.*` settings (docs/security.md)."""

    PREFIX = "auth."

    enabled: bool
    jwt_secret: str = field(repr=False)
    jwt_secret_file: str
    jwt_algorithm: str
    jwt_public_key: str
    token_expiry_seconds: int
    max_token_lifetime_seconds: int
    refresh_token_expiry_seconds: int
    require_auth_for: str
    issuer: str
    clients: tuple[str, ...] = field(repr=False)
    clients_file: str
