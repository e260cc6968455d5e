"""Bulk-data: rosbag recordings of faults (read-only) and uploaded files, per entity.

Rosbags are visible on an entity when any fault the recording covers is in the entity's
scope (every reporting source owned by the entity). Uploads belong to the component or app
they were uploaded to and are visible there and on the entities that contain it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from aiohttp import hdrs, web

from recorder.index import Recording
from recorder.uploads import Upload, UploadStore

from ..errors import INVALID_REQUEST, ApiError, bad_request, not_found
from ..faults.scope import in_scope
from ..http.jsonutil import dumps, json_response
from ..http.multipart import body_parts
from ..http.ranges import parse_range, plan
from ..http.resource_helpers import entities, entity_not_found, envelope, resolve_entity
from ..http.routes import Registry
from ..http.state import GatewayState, state_of
from ..model.entities import Entity, EntitySet
from ..model.roles import Role
from ..model.timestamps import iso
from .keys import BULK_DATA
from .service import DOCS, ROSBAGS, BulkData, recorder_class
from .settings import BulkDataSettings

if TYPE_CHECKING:
    from ..faults.service import FaultService

CHUNK = 256 * 1024
TEXT_FIELD_MAX = 64 * 1024  # description and metadata fields
_UNSAFE_NAME = re.compile(r'[\x00-\x1f\x7f"\\;]')

# (path prefix, entity type); nested prefixes address the `sub_id` entity
PREFIXES = (
    ("/areas/{area_id}", "areas"),
    ("/components/{component_id}", "components"),
    ("/apps/{app_id}", "apps"),
    ("/functions/{function_id}", "functions"),
    ("/areas/{area_id}/subareas/{sub_id}", "areas"),
    ("/components/{component_id}/subcomponents/{sub_id}", "components"),
)
READ_ONLY = frozenset({"areas", "functions"})


# lifecycle --------------------------------------------------------------------------------------
def categories(state: GatewayState) -> list[str]:
    """`rosbags` plus the configured upload categories."""
    configured = state.settings.typed(BulkDataSettings.from_settings).categories
    return [ROSBAGS, *(c for c in configured if c != ROSBAGS)]


# entities and scope -----------------------------------------------------------------------------
def _entity(request: web.Request) -> Entity:
    entity = resolve_entity(request)
    sub = request.match_info.get("sub_id")
    if sub is None:
        return entity
    child = entities(request).of(entity.kind).get(sub)
    if child is None or child.parent != entity.id:
        raise entity_not_found(entity.kind, sub)
    return child


def _owners(state: GatewayState, entity: Entity) -> list[str]:
    return [a.node_fqn for a in state.cache.entities.member_apps(entity) if a.node_fqn]


def _recording_visible(svc: FaultService, rec: Recording, owners: list[str]) -> bool:
    """Spec: access when any fault the recording covers is in the entity's scope."""
    for code in rec.fault_codes:
        fault = svc.get(code)
        sources = list(fault.sources) if fault is not None else rec.sources.get(code, [])
        if in_scope(sources, owners):
            return True
    return False


def _components_under(es: EntitySet, entity: Entity) -> set[str]:
    out: set[str] = set()
    if entity.kind == "components":
        stack = [entity.id]
        while stack:
            cid = stack.pop()
            if cid not in out:
                out.add(cid)
                stack.extend(c.id for c in es.subcomponents(cid))
    elif entity.kind == "areas":
        areas, stack = set(), [entity.id]
        while stack:
            aid = stack.pop()
            if aid not in areas:
                areas.add(aid)
                stack.extend(a.id for a in es.subareas(aid))
        for comp in es.components.values():
            if comp.area in areas:
                out |= _components_under(es, comp)
    return out


def _upload_visible(state: GatewayState, entity: Entity, up: Upload) -> bool:
    if (up.owner_kind, up.owner_id) == (entity.kind, entity.id):
        return True
    es = state.cache.entities
    if up.owner_kind == "apps":
        return any(a.id == up.owner_id for a in es.member_apps(entity))
    if up.owner_kind == "components":
        return up.owner_id in _components_under(es, entity)
    return False


# descriptors ------------------------------------------------------------------------------------
def rosbag_descriptor(state: GatewayState, rec: Recording) -> dict[str, Any]:
    """A recording's descriptor."""
    return {"id": rec.id, "name": f"{rec.id}.{rec.format}", "mimetype": recorder_class().mimetype(rec),
            "size": rec.size, "creation_date": iso(rec.created_ns),
            state.xv: {"fault_codes": list(rec.fault_codes), "duration_sec": rec.duration_sec,
                       "format": rec.format, "recording_id": rec.id}}


def upload_descriptor(state: GatewayState, up: Upload) -> dict[str, Any]:
    """An upload's descriptor: x-vendor carries the uploaded metadata's keys."""
    out: dict[str, Any] = {"id": up.id, "name": up.name, "mimetype": up.mimetype,
                           "size": up.size, "creation_date": iso(up.created_ns)}
    if up.description:
        out["description"] = up.description
    out[state.xv] = dict(up.metadata)
    return out


def _visible_recordings(bulk: BulkData, entity: Entity) -> list[Recording]:
    state, rec_svc = bulk.state, bulk.recorder
    if rec_svc is None:
        return []
    owners = _owners(state, entity)
    return [r for r in sorted(rec_svc.index.recordings.values(),
                              key=lambda r: (r.created_ns, r.id), reverse=True)
            if _recording_visible(bulk.faults, r, owners)]


def _store(request: web.Request) -> UploadStore:
    return request.app[BULK_DATA].uploads


def _category(state: GatewayState, entity: Entity, category: str) -> str:
    if category not in categories(state):
        raise not_found(f"Bulk-data category '{category}' not found on {entity.type} "
                        f"'{entity.id}'", entity_id=entity.id, category=category)
    return category


# handlers ---------------------------------------------------------------------------------------
async def list_categories(request: web.Request) -> web.Response:
    """Bulk-data categories of an entity."""
    state = state_of(request)
    entity = _entity(request)
    return json_response(envelope(state, categories(state), entity.id))


async def list_descriptors(request: web.Request) -> web.Response:
    """Descriptors of one category: one per recording (rosbags) or per upload."""
    state = state_of(request)
    if request.match_info["category"] == DOCS:
        return await state.docs_route.handler(request)
    entity = _entity(request)
    category = _category(state, entity, request.match_info["category"])
    if category == ROSBAGS:
        items = [rosbag_descriptor(state, r) for r in _visible_recordings(request.app[BULK_DATA], entity)]
    else:
        items = [upload_descriptor(state, u) for u in _store(request).list(category)
                 if _upload_visible(state, entity, u)]
    return json_response(envelope(state, items, entity.id))


async def download(request: web.Request) -> web.StreamResponse:
    """The file: a recording (by id, or a fault code's newest) or an upload; Range aware."""
    state = state_of(request)
    if request.match_info["bulk_id"] == DOCS:
        return await state.docs_route.handler(request)
    entity = _entity(request)
    category = _category(state, entity, request.match_info["category"])
    item_id = request.match_info["bulk_id"]
    missing = not_found(f"Bulk-data '{item_id}' not found in '{category}' on {entity.type} "
                        f"'{entity.id}'", entity_id=entity.id, category=category, id=item_id)
    if category == ROSBAGS:
        rec_svc = request.app[BULK_DATA].recorder
        if rec_svc is None:
            raise not_found(f"Bulk-data '{item_id}' not found in '{category}' on {entity.type} "
                            f"'{entity.id}': this gateway records no faults (set "
                            "snapshots.rosbag.enabled=true to record them)",
                            entity_id=entity.id, category=category, id=item_id,
                            setting="snapshots.rosbag.enabled")
        rec = rec_svc.resolve(item_id)
        if rec is None:
            raise missing
        owners = _owners(state, entity)
        if not _recording_visible(request.app[BULK_DATA].faults, rec, owners):
            # an id naming a recording out of scope may still be a fault code in scope
            recs = [r for r in rec_svc.index.for_code(item_id)
                    if _recording_visible(request.app[BULK_DATA].faults, r, owners)]
            if not recs:
                raise missing
            rec = recs[0]
        return await serve_file(request, rec_svc.path(rec), recorder_class().mimetype(rec),
                                f"{rec.id}.{rec.format}", f'"{rec.id}-{rec.size}"')
    up = _store(request).get(category, item_id)
    if up is None or not _upload_visible(state, entity, up):
        raise missing
    return await serve_file(request, _store(request).path(up), up.mimetype, up.name,
                            f'"{up.id}-{up.size}"')


async def upload(request: web.Request) -> web.Response:
    """Upload a file (multipart: file, description, metadata) into a category."""
    state = state_of(request)
    entity = _entity(request)
    category = request.match_info["category"]
    if category == ROSBAGS:
        raise bad_request("Category 'rosbags' is read-only: recordings are made by the fault "
                          "manager", category=category)
    if category not in categories(state):
        raise bad_request(f"Unknown bulk-data category '{category}'; configured: "
                          f"{', '.join(categories(state)[1:]) or 'none'}", category=category)
    if not request.content_type.startswith("multipart/form-data"):
        raise bad_request("An upload is multipart/form-data with a 'file' field",
                          content_type=request.content_type)
    store = _store(request)
    limit = state.settings.typed(BulkDataSettings.from_settings).max_upload_size
    fields = await _receive(request, store, category, limit)
    incoming, name, mimetype, description, metadata = fields
    up = Upload("", category, entity.kind, entity.id, name, mimetype, 0, time.time_ns(),
                description, metadata)
    commit = asyncio.get_running_loop().run_in_executor(None, store.commit, incoming, up)
    try:
        up = await asyncio.shield(commit)
    except asyncio.CancelledError:
        raise  # every byte arrived: the commit completes on its own
    except Exception:
        incoming.abort()
        raise
    location = f"{request.path.rstrip('/')}/{up.id}"
    return json_response(upload_descriptor(state, up), status=201,
                         headers={"Location": location})


async def _receive(request: web.Request, store: UploadStore, category: str, limit: int
                   ) -> tuple[Any, str, str, str, dict[str, Any]]:
    """Stream the multipart body: the file into a temporary directory, the rest in memory."""
    incoming: Any = None
    name, mimetype, description, metadata = "upload", "application/octet-stream", "", {}
    try:
        async for part in body_parts(request):
            if part.name == "file":
                if incoming is not None:
                    raise bad_request("Only one 'file' field is accepted")
                name = _safe_name(part.filename or "upload")
                mimetype = part.headers.get(hdrs.CONTENT_TYPE, mimetype)
                incoming = store.begin(category)
                while chunk := await part.read_chunk(CHUNK):
                    if incoming.size + len(chunk) > limit:
                        raise ApiError(413, INVALID_REQUEST,
                                       f"The file exceeds bulk_data.max_upload_size ({limit} "
                                       "bytes)", parameters={"max_upload_size": limit})
                    # a page-cache write of one chunk; the fsync happens off the loop at commit
                    incoming.write(chunk)
            elif part.name in ("description", "metadata"):
                raw = await part.read(decode=True)
                if len(raw) > TEXT_FIELD_MAX:
                    raise bad_request(f"Field '{part.name}' is longer than {TEXT_FIELD_MAX} "
                                      "bytes")
                text = raw.decode("utf-8", errors="replace")
                if part.name == "description":
                    description = text
                else:
                    metadata = _metadata(text)
            else:
                await part.release()
        if incoming is None:
            raise bad_request("The upload has no 'file' field")
    except BaseException:
        # failed, too large or interrupted (the client went away): nothing is left behind
        if incoming is not None:
            incoming.abort()
        raise
    return incoming, name, mimetype, description, metadata


def _metadata(text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise bad_request(f"Field 'metadata' is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise bad_request("Field 'metadata' must be a JSON object of key-values")
    try:
        dumps(value)  # stored and served as is: it must be serializable (no 2**64 integers)
    except TypeError as exc:
        raise bad_request(f"Field 'metadata' cannot be stored: {exc}") from None
    return value


def _safe_name(filename: str) -> str:
    base = os.path.basename(filename.replace("\\", "/")).strip()
    return _UNSAFE_NAME.sub("_", base) or "upload"


async def delete(request: web.Request) -> web.Response:
    """Delete an upload (rosbags are managed by the fault manager: 400)."""
    state = state_of(request)
    entity = _entity(request)
    category = request.match_info["category"]
    if category == ROSBAGS:
        raise bad_request("Category 'rosbags' is managed by the fault manager: recordings "
                          "are deleted when their faults are cleared or by the storage quota",
                          category=category)
    _category(state, entity, category)
    store = _store(request)
    up = store.get(category, request.match_info["bulk_id"])
    if up is None or not _upload_visible(state, entity, up):
        raise not_found(f"Bulk-data '{request.match_info['bulk_id']}' not found in "
                        f"'{category}' on {entity.type} '{entity.id}'", entity_id=entity.id)
    directory = store.remove(up)
    await asyncio.to_thread(shutil.rmtree, directory, True)
    return web.Response(status=204)


def read_only(kind: str) -> Any:
    """The handler answering 405 for uploads and deletes on a read-only entity type."""

    async def refuse(request: web.Request) -> web.Response:
        raise ApiError(405, INVALID_REQUEST,
                       f"Bulk-data on {kind} is read-only; upload and delete on components "
                       "and apps", parameters={"entity_type": kind, "method": request.method},
                       headers={"Allow": "GET"})

    refuse.__doc__ = f"Bulk-data on {kind} is read-only (405)"
    return refuse


# file responses ---------------------------------------------------------------------------------
DOWNLOAD_SAFETY = {"X-Content-Type-Options": "nosniff",
                   "Content-Security-Policy": "sandbox; default-src 'none'"}


async def serve_file(request: web.Request, path: Path, ctype: str, filename: str,
                     etag: str) -> web.StreamResponse:
    """200, 206 (one range) or 206 multipart/byteranges; 416 for an unsatisfiable Range."""
    loop = asyncio.get_running_loop()
    try:
        fd = await loop.run_in_executor(None, os.open, str(path), os.O_RDONLY)
    except FileNotFoundError:
        raise not_found(f"'{filename}' is no longer stored") from None
    try:
        size = os.fstat(fd).st_size
        headers: dict[str, str] = {hdrs.CONTENT_DISPOSITION: _disposition(filename),
                   hdrs.ACCEPT_RANGES: "bytes", hdrs.ETAG: etag,
                   hdrs.ACCESS_CONTROL_EXPOSE_HEADERS: "Content-Disposition"}
        header = request.headers.get(hdrs.RANGE)
        if_range = request.headers.get(hdrs.IF_RANGE)
        spans: list[tuple[bytes, int, int]] = []  # (prefix, start, end inclusive)
        trailer = b""
        # Whatever the uploader named as media type, a browser must not sniff or run it.
        headers.update(DOWNLOAD_SAFETY)
        ranges = None
        if header is not None and (if_range is None or if_range == etag):
            ranges = plan(parse_range(header), size, len(ctype))  # unparseable: 416 earlier
            if ranges == []:
                raise ApiError(416, INVALID_REQUEST,
                               f"Range '{header}' does not overlap the {size} bytes of "
                               f"'{filename}'", parameters={"size": size},
                               headers={hdrs.CONTENT_RANGE: f"bytes */{size}"})
        if ranges:
            status = 206
            if len(ranges) == 1:
                start, end = ranges[0]
                headers[hdrs.CONTENT_TYPE] = ctype
                headers[hdrs.CONTENT_RANGE] = f"bytes {start}-{end}/{size}"
                spans.append((b"", start, end))
            else:
                boundary = secrets.token_hex(16)
                headers[hdrs.CONTENT_TYPE] = f"multipart/byteranges; boundary={boundary}"
                for i, (start, end) in enumerate(ranges):
                    head = (f"--{boundary}\r\nContent-Type: {ctype}\r\n"
                            f"Content-Range: bytes {start}-{end}/{size}\r\n\r\n")
                    spans.append(((b"\r\n" if i else b"") + head.encode(), start, end))
                trailer = f"\r\n--{boundary}--\r\n".encode()
        else:
            status = 200
            headers[hdrs.CONTENT_TYPE] = ctype
            spans.append((b"", 0, size - 1))
        length = sum(len(p) + (e - s + 1) for p, s, e in spans) + len(trailer)
        resp = web.StreamResponse(status=status, headers=headers)
        resp.content_length = length
        await resp.prepare(request)
        try:
            for prefix, start, end in spans:
                if prefix:
                    await resp.write(prefix)
                await _copy(loop, fd, resp, start, end)
            if trailer:
                await resp.write(trailer)
            await resp.write_eof()
        except ConnectionResetError:
            pass  # the client went away; `bag pull` resumes with Range
        return resp
    finally:
        os.close(fd)


async def _copy(loop: asyncio.AbstractEventLoop, fd: int, resp: web.StreamResponse,
                start: int, end: int) -> None:
    pos = start
    while pos <= end:
        chunk = await loop.run_in_executor(None, os.pread, fd, min(CHUNK, end - pos + 1), pos)
        if not chunk:
            raise ConnectionResetError("file shorter than announced")
        await resp.write(chunk)
        pos += len(chunk)


def _disposition(filename: str) -> str:
    """`attachment; filename=<name>` (the spec's form); quoted when it has spaces or
    separators, plus an RFC 6266 `filename*` when it is not ASCII."""
    if re.fullmatch(r"[A-Za-z0-9._+-]+", filename):
        return f"attachment; filename={filename}"
    ascii_name = filename.encode("ascii", "replace").decode().replace("?", "_")
    value = 'attachment; filename="' + ascii_name.replace('"', "_") + '"'
    if ascii_name != filename:
        value += "; filename*=UTF-8''" + quote(filename, safe="")
    return value


# routes -----------------------------------------------------------------------------------------
def _paths(kinds: Iterable[str]) -> list[tuple[str, str]]:
    return [(p, k) for p, k in PREFIXES if k in kinds]


def register(reg: Registry) -> None:
    """Declare the bulk-data routes on every entity path."""
    all_kinds = ("areas", "components", "apps", "functions")
    for prefix, kind in _paths(all_kinds):
        reg.add("GET", f"{prefix}/bulk-data", list_categories, tag=kind,
                response="ListEnvelope", summary="List bulk-data categories")
        reg.add("GET", f"{prefix}/bulk-data/{{category}}", list_descriptors, tag=kind,
                response="ListEnvelope", summary="List bulk-data descriptors of a category")
        reg.add("GET", f"{prefix}/bulk-data/{{category}}/{{bulk_id}}", download, tag=kind,
                summary="Download a bulk-data file (Range supported)")
        writable = kind not in READ_ONLY
        reg.add("POST", f"{prefix}/bulk-data/{{category}}", upload if writable else read_only(kind),
                role=Role.OPERATOR, tag=kind, status=201 if writable else 405,
                response="Object" if writable else None,
                summary="Upload a file (multipart/form-data)" if writable
                else "Upload (read-only entity type: 405)")
        reg.add("DELETE", f"{prefix}/bulk-data/{{category}}/{{bulk_id}}",
                delete if writable else read_only(kind), role=Role.OPERATOR, tag=kind,
                status=204 if writable else 405,
                summary="Delete an upload" if writable else "Delete (read-only entity type: 405)")
