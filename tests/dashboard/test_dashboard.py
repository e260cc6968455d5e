"""The dashboard's static files: what the package ships and how / and /dashboard/* serve it."""

from __future__ import annotations

import asyncio
import re
from types import SimpleNamespace

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from multidict import CIMultiDict

from gateway.dashboard import install
from gateway.dashboard.assets import STATIC_DIR, load, not_modified, total_bytes
from gateway.settings.config import load as load_settings

PAGE_BUDGET = 200 * 1024
IMPORT = re.compile(r"""(?:from|import)\s+['"](\./[^'"]+)['"]""")
REFERENCE = re.compile(r"""(?:src|href)="(/dashboard/[^"]+)\"""")


def test_every_module_import_and_page_reference_resolves() -> None:
    assets = load()
    assert "index.html" in assets and "js/main.js" in assets
    for path, asset in assets.items():
        if path.endswith(".js"):
            for rel in IMPORT.findall(asset.body.decode()):
                target = (STATIC_DIR / path).parent.joinpath(rel).resolve()
                assert target.relative_to(STATIC_DIR.resolve()).as_posix() in assets, (path, rel)
    for ref in REFERENCE.findall(assets["index.html"].body.decode()):
        assert ref.removeprefix("/dashboard/") in assets, ref


def test_page_weight_is_under_budget() -> None:
    assert total_bytes(load()) < PAGE_BUDGET


def test_no_inline_script_or_html_injection_sinks() -> None:
    # The CSP forbids inline scripts; API text reaches the page through textContent only.
    assets = load()
    assert "<script>" not in assets["index.html"].body.decode()
    for path, asset in assets.items():
        if path.endswith(".js"):
            text = asset.body.decode()
            assert "innerHTML" not in text and "insertAdjacentHTML" not in text, path
            assert "localStorage" not in text and "sessionStorage" not in text, path


def test_etag_match() -> None:
    asset = load()["index.html"]
    assert not_modified(asset, asset.etag)
    assert not_modified(asset, f'"x", {asset.etag}')
    assert not_modified(asset, "W/" + asset.etag)
    assert not not_modified(asset, '"other"') and not not_modified(asset, None)


def _fetch(path: str, headers: dict[str, str] | None = None, enabled: bool = True
           ) -> tuple[int, CIMultiDict[str], bytes, set[str]]:
    """GET path on an app with only the dashboard installed: status, headers, body, features."""
    state = SimpleNamespace(settings=load_settings(None, [f"dashboard.enabled={enabled}"]), features=set())

    async def run() -> tuple[int, CIMultiDict[str], bytes, set[str]]:
        app = web.Application()
        install(app, state)  # type: ignore[arg-type]
        async with TestClient(TestServer(app)) as client:
            resp = await client.get(path, headers=headers or {})
            return resp.status, CIMultiDict(resp.headers), await resp.read(), state.features

    return asyncio.run(run())


def test_served_at_root_with_security_headers() -> None:
    status, headers, body, features = _fetch("/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert b'type="module" src="/dashboard/js/main.js"' in body
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert "dashboard" in features
    status, headers, body, _ = _fetch("/dashboard/js/api.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    assert body == (STATIC_DIR / "js" / "api.js").read_bytes()


def test_revalidation_answers_304() -> None:
    etag = load()["app.css"].etag
    status, headers, body, _ = _fetch("/dashboard/app.css", {"If-None-Match": etag})
    assert status == 304 and body == b"" and headers["ETag"] == etag


def test_only_shipped_files_are_served() -> None:
    for path in ("/dashboard/nope.js", "/dashboard/../assets.py", "/dashboard/%2e%2e/routes.py",
                 "/dashboard/js/../../assets.py"):
        assert _fetch(path)[0] == 404, path


def test_setting_turns_the_dashboard_off() -> None:
    status, _, _, features = _fetch("/", enabled=False)
    assert status == 404 and "dashboard" not in features
    assert _fetch("/dashboard/js/main.js", enabled=False)[0] == 404
