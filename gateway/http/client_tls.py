"""aiohttp's default client TLS contexts: the system CA store loaded once a client needs it.

`aiohttp.connector` builds two default client SSL contexts when it is imported, and each
loads the system CA bundle (OpenSSL parses about 150 certificates: 0.7 MiB per context),
although the gateway's own client connections go only to federation peers. `import_aiohttp()`
imports aiohttp with the default verify paths of the contexts built meanwhile postponed;
`load_ca()` loads them (blocking file reads: from a thread on a running loop) and must run
before any client uses them: the federation service and the plugin manager (when a plugin
is loaded) do at start, and every federation session checks. Contexts built after the import
load their CA store as usual.
"""

from __future__ import annotations

import asyncio
import ssl
import sys
import threading

_pending: list[ssl.SSLContext] = []
_lock = threading.Lock()


def _postpone(context: ssl.SSLContext) -> None:
    _pending.append(context)


def import_aiohttp() -> None:
    """Import aiohttp, its default client contexts' CA store left for `load_ca()`."""
    if "aiohttp" in sys.modules:
        return
    with _lock:
        ssl.SSLContext.set_default_verify_paths = _postpone  # type: ignore[method-assign,assignment]
        try:
            import aiohttp.connector  # noqa: F401, PLC0415 - the CA store left for load_ca()
        finally:
            del ssl.SSLContext.set_default_verify_paths  # the inherited method again


def pending() -> bool:
    """True while contexts built by the aiohttp import lack their CA store."""
    return bool(_pending)


def load_ca() -> None:
    """Load the system CA store into the postponed contexts (once; blocking I/O)."""
    if not _pending:
        return
    with _lock:
        while _pending:
            ssl.SSLContext.set_default_verify_paths(_pending.pop())


async def ensure_ca() -> None:
    """`load_ca()` off the event loop, when contexts wait for it."""
    if _pending:
        await asyncio.to_thread(load_ca)
