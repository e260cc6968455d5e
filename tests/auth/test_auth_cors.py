"""CORS policy: preflight decisions and response headers."""

from __future__ import annotations

import pytest

from gateway.http.cors import CorsPolicy
from gateway.settings import config
from gateway.settings.config import ConfigError


def policy(*overrides: str) -> CorsPolicy:
    p = CorsPolicy.from_settings(config.load(None, list(overrides)))
    assert p is not None
    return p


def test_off_by_default() -> None:
    assert CorsPolicy.from_settings(config.load()) is None


def test_preflight_allowed() -> None:
    p = policy("cors.allowed_origins=[https://ui.example/]", "cors.max_age_seconds=60",
               "api.vendor=medkit")
    out = p.preflight("https://ui.example", "put", ["Authorization", "x-medkit-no-fan-out"])
    assert isinstance(out, dict)
    assert out["Access-Control-Allow-Origin"] == "https://ui.example"
    assert out["Access-Control-Allow-Methods"] == "GET, PUT, POST, DELETE"
    assert "X-Medkit-No-Fan-Out" in out["Access-Control-Allow-Headers"]
    assert out["Access-Control-Max-Age"] == "60"
    assert "Access-Control-Allow-Credentials" not in out


@pytest.mark.parametrize(("origin", "method", "headers", "reason"), [
    ("https://evil.example", "GET", [], "origin"),
    ("https://ui.example:8443", "GET", [], "origin"),  # the port is part of the origin
    ("https://UI.example", "GET", [], "origin"),  # matched exactly, as browsers serialize
    ("https://ui.example/", "GET", [], "origin"),
    ("https://ui.example.evil", "GET", [], "origin"),
    ("https://ui.example", "PATCH", [], "method"),
    ("https://ui.example", "GET", ["X-Other"], "header"),
])
def test_preflight_refused(origin: str, method: str, headers: list[str], reason: str) -> None:
    out = policy("cors.allowed_origins=[https://ui.example]").preflight(origin, method, headers)
    assert isinstance(out, str) and out.startswith(reason)


def test_wildcard_and_credentials() -> None:
    p = policy("cors.allowed_origins=['*']")
    assert p.response_headers("https://any.example")["Access-Control-Allow-Origin"] == "*"
    with pytest.raises(ConfigError, match="'cors.allow_credentials'"):
        policy("cors.allowed_origins=['*']", "cors.allow_credentials=true")


def test_response_headers_expose_downloads() -> None:
    p = policy("cors.allowed_origins=[https://ui.example]", "cors.allow_credentials=true")
    h = p.response_headers("https://ui.example")
    assert h["Access-Control-Allow-Credentials"] == "true"
    assert "Content-Disposition" in h["Access-Control-Expose-Headers"]
    assert h["Vary"] == "Origin"
    assert p.response_headers("https://evil.example") == {"Vary": "Origin"}
    assert p.response_headers(None) == {"Vary": "Origin"}
