"""Observed resource URIs of subscriptions and triggers (pure): parse and check."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

API_PREFIX = "/api/v1"
ENTITY_TYPES = ("areas", "components", "apps", "functions")
_ID = re.compile(r"^[A-Za-z0-9_\-]+$")
_COLLECTION = re.compile(r"^[a-z][a-z0-9\-]*$")


class UriError(ValueError):
    """A resource URI that names no collection; the message says why."""


@dataclass(frozen=True)
class ResourceRef:
    """`/api/v1/{entity_type}/{entity_id}/{collection}{path}` taken apart."""

    entity_type: str
    entity_id: str
    collection: str
    path: str  # "" or "/<item path>" (percent-decoded)
    # The item was written as an id keeping its leading '/' (`data//chassis/x`, a medkit data
    # id): the URI echoes that form; `path` is the same either way.
    slash_id: bool = field(default=False, compare=False)

    @property
    def uri(self) -> str:
        """The canonical URI (the item's leading '/' kept when it was written so)."""
        lead = "/" if self.slash_id and self.path else ""
        return (f"{API_PREFIX}/{self.entity_type}/{self.entity_id}/{self.collection}"
                f"{lead}{self.path}")


def parse_resource(text: object) -> ResourceRef:
    """The parts of a resource URI; UriError for anything malformed or with '..'."""
    if not isinstance(text, str) or not text:
        raise UriError("'resource' must be a non-empty string such as "
                       "/api/v1/apps/<app_id>/data/<topic>")
    parts = urlsplit(text)
    path = parts.path
    if parts.query or parts.fragment:
        raise UriError(f"resource {text!r} must not carry a query or fragment")
    if not path.startswith(API_PREFIX + "/"):
        raise UriError(f"resource {text!r} must start with {API_PREFIX}/")
    segs = path[len(API_PREFIX) + 1:].split("/")
    if len(segs) < 3:
        raise UriError(f"resource {text!r} must name an entity and a collection: "
                       f"{API_PREFIX}/<entity type>/<entity id>/<collection>[/<path>]")
    decoded = [unquote(s) for s in segs]
    if any(s in ("..", ".") for s in decoded) or any(".." in s.split("/") for s in decoded):
        raise UriError(f"resource {text!r} contains a path traversal segment")
    etype, eid, collection = decoded[0], decoded[1], decoded[2]
    if etype not in ENTITY_TYPES:
        raise UriError(f"resource {text!r}: '{etype}' is not an entity type "
                       f"({', '.join(ENTITY_TYPES)})")
    if not _ID.match(eid):
        raise UriError(f"resource {text!r}: entity id {eid!r} is not a valid id")
    if not _COLLECTION.match(collection):
        raise UriError(f"resource {text!r}: {collection!r} is not a collection name")
    item = segs[3:]
    # `<collection>//a/b`: the item id keeps its leading '/' (a data id is its topic path;
    # the reference matches `(/.*)?` after the collection). Other empty segments are refused.
    slash_id = len(item) > 1 and item[0] == ""
    if any(s == "" for s in item[1 if slash_id else 0:]):
        raise UriError(f"resource {text!r} has an empty path segment")
    rest = "/".join(decoded[3:]).lstrip("/")  # an encoded topic may carry its own '/'
    return ResourceRef(etype, eid, collection, "/" + rest if rest else "", slash_id)


def topic_matches(topic: str, path: str) -> bool:
    """Whether a resource path ('/...') names a topic: exactly, or as its trailing segments."""
    return bool(path) and (topic == path or topic.endswith(path))
