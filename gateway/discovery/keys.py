"""The app key of manifest discovery; importing it does not import the manifest stack."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from .pipeline import ManifestDiscovery

# Set by make_app in the manifest-backed modes only (docs/manifest.md).
DISCOVERY: web.AppKey[ManifestDiscovery] = web.AppKey("manifest_discovery")
