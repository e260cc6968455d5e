"""`GET /manifest/status`: the loaded manifest, its counts and its validation outcome."""

from __future__ import annotations

from aiohttp import web

from ..discovery.keys import DISCOVERY
from ..http.jsonutil import json_response
from ..http.routes import Registry
from ..model.roles import Role


async def manifest_status(request: web.Request) -> web.Response:
    """Manifest discovery status (inactive in runtime_only mode)."""
    disc = request.app.get(DISCOVERY)
    if disc is not None:
        return json_response(disc.status())
    from ..discovery.pipeline import (  # noqa: PLC0415 - re2, yaml: manifests only when used
        inactive_status,
    )

    return json_response(inactive_status())


def register(reg: Registry) -> None:
    """Declare the manifest status route."""
    reg.add("GET", "/manifest/status", manifest_status, role=Role.VIEWER, tag="manifest",
            response="Object", summary="Manifest discovery status")
