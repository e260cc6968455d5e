"""The app key of push delivery; importing it does not import the engines."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from .service import PushDelivery

PUSH_DELIVERY: web.AppKey[PushDelivery] = web.AppKey("push_delivery")
