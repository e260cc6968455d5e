"""Token endpoint answers when authentication is off."""

from __future__ import annotations

from aiohttp import web

from ..http.jsonutil import JSON_TYPE, dumps
from ._base import WireBase


class SpecAuth(WireBase):
    """Token endpoints stay available with auth off (spec: for token management)."""

    def disabled(self) -> web.Response | None:
        """The answer of a token endpoint while auth is off; None serves it normally."""
        return None


class MedkitAuth(SpecAuth):
    """The reference answers 404 on every token endpoint while auth is off."""

    profile = "medkit"

    def disabled(self) -> web.Response | None:
        """404 in the OAuth2 error shape."""
        body = {"error": "resource-not-found", "error_description": "Authentication is not enabled"}
        return web.Response(body=dumps(body), status=404, content_type=JSON_TYPE)


AuthWire = SpecAuth
AUTH: dict[str, type[SpecAuth]] = {"spec": SpecAuth, "medkit": MedkitAuth}
