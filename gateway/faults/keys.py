"""The app key of the fault manager; importing it does not import the service."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from .service import FaultService

FAULT_SERVICE: web.AppKey[FaultService] = web.AppKey("fault_service")
