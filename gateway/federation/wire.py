"""The entity declaration a gateway serves to its primary, and its strict parser (pure).

One body holds the gateway's whole local entity set, so an entity refresh is one request;
the ETag names the gateway's boot and local discovery generation, so an unchanged peer
answers a conditional refresh with an empty 304.
"""

from __future__ import annotations

import re
from typing import Any

from ..model.entities import KINDS, Entity, EntitySet

FORMAT = 1
_ID = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
_STR_FIELDS = ("name", "source", "description")
_OPT_STR = ("node_fqn", "namespace", "component", "area", "parent")
_LISTS = ("hosts", "depends_on")


class WireError(ValueError):
    """A declaration that cannot be used (the refresh is discarded whole)."""


def etag(boot: int, generation: int) -> str:
    """The strong ETag of a local entity set."""
    return f'"{boot:x}-{generation}"'


def dump(entities: EntitySet, name: str, generation: int) -> dict[str, Any]:
    """The declaration body of a local entity set."""
    out: dict[str, Any] = {"format": FORMAT, "gateway": name, "generation": generation}
    for kind in KINDS:
        items = []
        for e in entities.of(kind).values():
            item: dict[str, Any] = {"id": e.id, "name": e.name, "source": e.source}
            if e.description:
                item["description"] = e.description
            for attr in _OPT_STR:
                value = getattr(e, attr)
                if value:
                    item[attr] = value
            if kind == "apps":
                item["is_online"] = e.is_online
            for attr in _LISTS:
                if getattr(e, attr):
                    item[attr] = list(getattr(e, attr))
            if e.identity:
                item["identity"] = e.identity
            items.append(item)
        out[kind] = items
    return out


def _entity(kind: str, raw: Any) -> Entity:
    if not isinstance(raw, dict):
        raise WireError(f"{kind}: entry is not an object")
    eid = raw.get("id")
    if not isinstance(eid, str) or not _ID.match(eid):
        raise WireError(f"{kind}: invalid id {eid!r}")
    fields: dict[str, Any] = {}
    for attr in _STR_FIELDS + _OPT_STR:
        value = raw.get(attr)
        if value is not None and not isinstance(value, str):
            raise WireError(f"{kind}/{eid}: '{attr}' is not a string")
        if value is not None:
            fields[attr] = value
    for attr in ("component", "area", "parent"):
        if attr in fields and not _ID.match(fields[attr]):
            raise WireError(f"{kind}/{eid}: invalid {attr} id")
    for attr in _LISTS:
        value = raw.get(attr, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and _ID.match(v)
                                                  for v in value):
            raise WireError(f"{kind}/{eid}: '{attr}' is not a list of ids")
        fields[attr] = list(value)
    online = raw.get("is_online", True)
    if not isinstance(online, bool):
        raise WireError(f"{kind}/{eid}: 'is_online' is not a bool")
    identity = raw.get("identity", {})
    if not isinstance(identity, dict):
        raise WireError(f"{kind}/{eid}: 'identity' is not an object")
    fields.setdefault("name", eid)
    return Entity(kind, eid, is_online=online, identity=identity, **fields)


def load(body: Any) -> tuple[EntitySet, int]:
    """(entity set, generation) of a declaration; WireError when any part is unusable."""
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise WireError("not an entity declaration of format 1")
    generation = body.get("generation")
    if not isinstance(generation, int) or isinstance(generation, bool):
        raise WireError("'generation' is not an integer")
    out = EntitySet(generation=generation)
    for kind in KINDS:
        raw = body.get(kind, [])
        if not isinstance(raw, list):
            raise WireError(f"'{kind}' is not a list")
        for item in raw:
            entity = _entity(kind, item)
            if entity.id in out.of(kind):
                raise WireError(f"{kind}: duplicate id {entity.id!r}")
            out.of(kind)[entity.id] = entity
    return out, generation
