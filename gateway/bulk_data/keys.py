"""The app key of bulk data (uploads and the recorder); importing it imports neither."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from .service import BulkData

BULK_DATA: web.AppKey[BulkData] = web.AppKey("bulk_data")
