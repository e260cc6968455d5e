"""A page stream's watch list and frames (pure): what one dashboard page follows over one SSE.

A page asks for `GET /x-<vendor>-page-stream?faults=1&watch=<resource>&watch=...`. Each
`watch` is an API resource a cyclic subscription may observe (`/api/v1/apps/a/data/t`,
`/api/v1/functions/f/x-<vendor>-graph`); its samples arrive as `event: sample` frames
tagged with the watch's index. Fault events keep their own ids, so the stream's
Last-Event-ID resumes the fault part like `/faults/stream` does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ApiError, invalid_parameter
from ..http.jsonutil import dumps
from ..http.routes import API_PREFIX, ENTITY_TYPES

MAX_WATCHES = 32  # resources one page may follow (each is a cyclic subscription)
MAX_RESOURCE_CHARS = 1024
PAGE_INTERVAL = "slow"  # 500 ms frames: a person reads them
RENEW_AFTER_S = 1.0  # an ended watch (its subscription expired) is created again after this


@dataclass(frozen=True)
class Watch:
    """One watched resource: its index in the request, entity and full URI."""

    index: int
    entity_type: str
    entity_id: str
    resource: str


@dataclass(frozen=True)
class PageWatch:
    """What a page stream follows."""

    faults: bool
    watches: tuple[Watch, ...]


def parse_watch(query: Mapping[str, Any], getall: Sequence[str]) -> PageWatch:
    """Check a page stream's query (`faults`, repeated `watch`); 400 naming the bad value."""
    faults_raw = str(query.get("faults", "0")).strip().lower()
    if faults_raw not in ("0", "1", "true", "false"):
        raise invalid_parameter("'faults' must be 1 (follow the fault stream) or 0",
                                parameter="faults")
    if len(getall) > MAX_WATCHES:
        raise invalid_parameter(f"at most {MAX_WATCHES} 'watch' resources per page stream, "
                                f"got {len(getall)}", parameter="watch")
    watches = []
    for index, resource in enumerate(getall):
        watches.append(_watch(index, resource))
    faults = faults_raw in ("1", "true")
    if not faults and not watches:
        raise invalid_parameter("a page stream needs something to follow: faults=1 and/or "
                                "one or more 'watch' resources", parameter="watch")
    return PageWatch(faults, tuple(watches))


def _watch(index: int, resource: str) -> Watch:
    if not resource or len(resource) > MAX_RESOURCE_CHARS:
        raise invalid_parameter(f"'watch' #{index + 1} must be an API resource path of at most "
                                f"{MAX_RESOURCE_CHARS} characters", parameter="watch")
    path = resource[len(API_PREFIX):] if resource.startswith(API_PREFIX + "/") else None
    parts = path.split("/") if path else []
    if len(parts) < 4 or parts[1] not in ENTITY_TYPES or not parts[2] or not parts[3]:
        raise invalid_parameter(f"'watch' {resource!r} is not a resource of an entity: use "
                                f"{API_PREFIX}/<entity type>/<id>/data/<topic> or "
                                f"{API_PREFIX}/<entity type>/<id>/<collection>",
                                parameter="watch")
    return Watch(index, parts[1], parts[2], resource)


def watching_frame(accepted: Mapping[int, str], refused: Mapping[int, ApiError],
                   faults: bool, vendor: str) -> bytes:
    """The first event: which watches are followed and why any is not."""
    body = {"faults": faults,
            "accepted": [{"watch": i, "resource": r} for i, r in sorted(accepted.items())],
            "refused": [{"watch": i, "status": e.status, **e.body(vendor)}
                        for i, e in sorted(refused.items())]}
    return b"event: watching\ndata: " + dumps(body) + b"\n\n"


def tag_frame(index: int, raw: bytes) -> bytes | None:
    """A cyclic subscription's frame tagged with its watch (None: a comment, not forwarded)."""
    if raw.startswith(b"data: ") and raw.endswith(b"\n\n"):
        return (b'event: sample\ndata: {"watch":%d,"frame":' % index) + raw[6:-2] + b"}\n\n"
    error = b"event: error\ndata: "
    if raw.startswith(error) and raw.endswith(b"\n\n"):
        return (b'event: watch-error\ndata: {"watch":%d,"error":' % index
                + raw[len(error):-2] + b"}\n\n")
    return None


def ended_frame(index: int, renewed: bool) -> bytes:
    """A watch's subscription ended (expired or deleted); renewed says whether it goes on."""
    return b'event: watch-end\ndata: {"watch":%d,"renewed":%s}\n\n' % (
        index, b"true" if renewed else b"false")
