"""The server's TLS context: TLS 1.2 or 1.3 only, optional client certificates (mutual TLS)."""

from __future__ import annotations

import ssl
from pathlib import Path

from ..process.settings import ServerSettings
from ..settings.config import ConfigError, Settings

VERSIONS = {"1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}


def _file(path: str, key: str, required: bool = True) -> str:
    if not path:
        if required:
            raise ConfigError(f"setting '{key}': required when server.tls.enabled is true")
        return ""
    full = Path(path).expanduser()
    if not full.is_file():
        raise ConfigError(f"setting '{key}': {path} is not a readable file")
    return str(full)


def server_context(settings: Settings) -> ssl.SSLContext | None:
    """The SSL context of server.tls.*, or None when TLS is off; ConfigError names the setting."""
    srv = settings.typed(ServerSettings.from_settings)
    if not srv.tls_enabled:
        return None
    cert = _file(srv.tls_cert_file, "server.tls.cert_file")
    key = _file(srv.tls_key_file, "server.tls.key_file")
    client_ca = _file(srv.tls_client_ca_file, "server.tls.client_ca_file", required=False)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = VERSIONS[srv.tls_min_version]
    ctx.maximum_version = ssl.TLSVersion.TLSv1_3
    ctx.options |= ssl.OP_NO_COMPRESSION | ssl.OP_CIPHER_SERVER_PREFERENCE
    try:
        ctx.load_cert_chain(cert, key)
    except (ssl.SSLError, ValueError) as exc:
        raise ConfigError(f"setting 'server.tls.key_file': the key does not load or does not "
                          f"match server.tls.cert_file ({exc})") from None
    if client_ca:
        try:
            ctx.load_verify_locations(cafile=client_ca)
        except ssl.SSLError as exc:
            raise ConfigError(f"setting 'server.tls.client_ca_file': not a PEM CA bundle "
                              f"({exc})") from None
        required = srv.tls_client_auth == "required"
        ctx.verify_mode = ssl.CERT_REQUIRED if required else ssl.CERT_OPTIONAL
    return ctx

