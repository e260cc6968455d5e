"""`diag-gateway mcp --gateway URL`: the MCP server on stdin/stdout for desktop clients.

The tools call the gateway's REST API over HTTP with the token from `--token-file` (or
$DIAG_GATEWAY_TOKEN), so the gateway applies the same roles, locks and limits as to any
client. Nothing but MCP messages is written to stdout; logs go to stderr.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

from ..http.client_tls import ensure_ca
from ..http.routes import API_PREFIX
from .rest import Rest, loopback_session

log = logging.getLogger(__name__)


def base_of(url: str) -> str:
    """`http://host:port[/api/v1]` -> `http://host:port`; ValueError for anything else."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"--gateway {url!r}: expected http(s)://host:port")
    path = parts.path.rstrip("/")
    if path not in ("", API_PREFIX):
        raise ValueError(f"--gateway {url!r}: give the gateway's address (optionally with "
                         f"{API_PREFIX}), not another path")
    return f"{parts.scheme}://{parts.netloc}"


def token_of(token_file: str | None) -> str | None:
    """The bearer token from the file (first line) or $DIAG_GATEWAY_TOKEN; None without."""
    if token_file:
        text = Path(token_file).expanduser().read_text(encoding="utf-8").strip()
        return text.splitlines()[0].strip() if text else None
    return os.environ.get("DIAG_GATEWAY_TOKEN") or None


async def serve(base: str, token: str | None, client_id: str, page_size: int,
                timeout_s: float, insecure: bool) -> None:
    """Serve MCP on stdio until stdin closes."""
    from .env import ToolEnv  # noqa: PLC0415 - the MCP SDK only when serving
    from .server import build  # noqa: PLC0415 - the MCP SDK only when serving

    if base.startswith("https") and not insecure:
        await ensure_ca()
    session = loopback_session()
    rest = Rest(session, base, authorization=f"Bearer {token}" if token else None,
                client_id=client_id, timeout_s=timeout_s,
                ssl_context=False if insecure else None)
    try:
        await build(ToolEnv(lambda: rest, page_size)).run_stdio_async()
    finally:
        await session.close()


def main(gateway: str, token_file: str | None, client_id: str, page_size: int,
         timeout_s: float, insecure: bool) -> int:
    """The `mcp` subcommand."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="diag-gateway mcp: %(levelname)s %(message)s")
    try:
        base = base_of(gateway)
        token = token_of(token_file)
    except (ValueError, OSError) as exc:
        print(f"diag-gateway mcp: {exc}", file=sys.stderr)
        return 2
    asyncio.run(serve(base, token, client_id, page_size, timeout_s, insecure))
    return 0
