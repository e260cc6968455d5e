"""The gates the gateway's own scripts and those a plugin serves share: anonymous callers,
uploads on and their size, and the reading of an upload's file and metadata."""

from __future__ import annotations

import json
import os
from typing import Any

from aiohttp import web

from ..errors import bad_request, invalid_parameter
from ..http.multipart import body_parts
from ..http.state import GatewayState, state_of
from .catalog import ANONYMOUS_REFUSED, anonymous_callers
from .settings import ScriptSettings
from .wire import SCRIPTS

META_LIMIT = 65536  # bytes of an upload's metadata field


def refuse_anonymous(request: web.Request, state: GatewayState) -> None:
    """403 when anonymous callers could run code and scripts.allow_anonymous is off (the
    gateway's own scripts and those a plugin serves alike)."""
    if anonymous_callers(state.settings) and \
            not state.settings.typed(ScriptSettings.from_settings).allow_anonymous:
        raise state_of(request).serializer(SCRIPTS).error(
            403, "scripts-anonymous-disabled", ANONYMOUS_REFUSED,
            setting="scripts.allow_anonymous")


def upload_limit(state: GatewayState) -> int:
    """The largest script upload in bytes; 400 while uploads are off (the gateway's own
    scripts and those a plugin serves alike)."""
    cfg = state.settings.typed(ScriptSettings.from_settings)
    if not cfg.allow_uploads:
        raise bad_request("Script uploads are disabled on this gateway (setting "
                          "scripts.allow_uploads)")
    return cfg.max_file_bytes


async def read_upload(request: web.Request, limit: int) -> tuple[str, bytes, dict[str, Any]]:
    """The file (name, bytes, never past limit) and metadata of a multipart upload."""
    too_large = state_of(request).serializer(SCRIPTS).error(
        413, "script-file-too-large",
        f"The script is larger than {limit} bytes (setting scripts.max_file_size_mb)",
        limit_bytes=limit)
    if request.content_length is not None and request.content_length > limit + 65536:
        raise too_large
    if not request.content_type.startswith("multipart/form-data"):
        raise bad_request("A script upload is multipart/form-data with a 'file' field",
                          content_type=request.content_type)
    filename, content, meta = "", None, {}  # type: tuple[str, bytes | None, dict[str, Any]]
    async for part in body_parts(request):
        if part.name == "file":
            filename = os.path.basename(part.filename or "")
            buf = bytearray()
            while chunk := await part.read_chunk(65536):
                buf.extend(chunk)
                if len(buf) > limit:
                    raise too_large
            content = bytes(buf)
        elif part.name == "metadata":
            raw = bytearray()
            while chunk := await part.read_chunk(65536):
                raw.extend(chunk)
                if len(raw) > META_LIMIT:
                    raise invalid_parameter(f"metadata is larger than {META_LIMIT} bytes")
            text = raw.decode("utf-8", "replace")
            try:
                meta = json.loads(text) if text.strip() else {}
            except ValueError:
                raise invalid_parameter("metadata is not valid JSON") from None
            if not isinstance(meta, dict):
                raise invalid_parameter("metadata must be a JSON object")
        else:
            await part.release()
    if content is None:
        raise bad_request("The upload has no 'file' field")
    return filename, content, meta
