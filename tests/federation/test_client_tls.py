"""aiohttp's default client TLS contexts get the system CA store before any client uses them."""

from __future__ import annotations

import subprocess
import sys

_CHILD = """
import asyncio, ssl
from gateway.http import client_tls
client_tls.import_aiohttp()
import aiohttp.connector as connector
from gateway.federation.client import PeerClient
from gateway.federation.settings import Budgets

system = ssl.create_default_context().cert_store_stats()["x509_ca"]
contexts = (connector._SSL_CONTEXT_VERIFIED, connector._SSL_CONTEXT_UNVERIFIED)
print(system > 0, client_tls.pending(), [c.cert_store_stats()["x509_ca"] for c in contexts])

async def first_session():
    client = PeerClient("https://peer.invalid:8443", Budgets(), 1 << 20)
    client.session
    await client.session.close()

asyncio.run(first_session())
print(client_tls.pending(), [c.cert_store_stats()["x509_ca"] == system for c in contexts])
print("set_default_verify_paths" in ssl.SSLContext.__dict__,
      ssl.create_default_context().cert_store_stats()["x509_ca"] == system)
"""


def test_the_ca_store_waits_for_the_first_client_session() -> None:
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                         timeout=120, check=True).stdout.splitlines()
    assert out == ["True True [0, 0]", "False [True, True]", "False True"]
