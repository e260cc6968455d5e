"""The app key of the fault manager and its reader; importing it does not import the service."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from .service import FaultService

FAULT_SERVICE: web.AppKey[FaultService] = web.AppKey("fault_service")


def service(request: web.Request) -> FaultService:
    """The fault service of a request's app."""
    return request.app[FAULT_SERVICE]
