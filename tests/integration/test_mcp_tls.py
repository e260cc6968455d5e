"""/mcp over HTTPS (docs/mcp.md): the tools' requests reach the gateway over TLS too."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import free_port
from tests.integration.mcp_support import http_client, run, tool, tool_error
from tests.integration.test_security_helpers import (
    Pki,
    SecureGateway,
    auth_settings,
    client_context,
    make_pki,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def gw(domain: int, pki: Pki, tmp_path_factory: pytest.TempPathFactory
       ) -> Iterator[SecureGateway]:
    tmp = tmp_path_factory.mktemp("mcp_tls")
    settings = auth_settings(tmp / "state", "write", "server.tls.enabled=true",
                             f"server.tls.cert_file={pki.server_cert}",
                             f"server.tls.key_file={pki.server_key}")
    g = SecureGateway(free_port(), domain, settings, tmp / "gateway.log",
                      ssl_context=client_context(pki)).start()
    try:
        yield g
    finally:
        g.stop()


def test_tools_over_https(gw: SecureGateway, pki: Pki) -> None:
    operator = gw.token("operator-client", "operator-secret")["access_token"]

    async def go() -> None:
        async with http_client(gw.port, None, tls=client_context(pki)) as anon:
            health = await tool(anon, "health")  # reads are open with require_auth_for: write
            assert health["status"] in ("healthy", "degraded")
            assert "apps/temp_sensor" not in {e["entity"] for e in (await tool(
                anon, "list_entities"))["items"]}  # no nodes in this domain
            text = await tool_error(anon, "lock", entity="apps/none")
            assert "401 unauthorized" in text
        async with http_client(gw.port, operator, tls=client_context(pki)) as c:
            text = await tool_error(c, "lock", entity="apps/none")
            assert "404 resource-not-found" in text
    run(go())
