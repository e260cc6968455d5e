"""Peer items re-serialized with the local schema (pure).

Spec "Aggregation behaviour" 3: a peer item that fails validation is dropped (and listed in
`peer_dropped_items`); a valid one is rebuilt field by field from what this gateway's own
items carry, so unknown peer fields never reach a client.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SEVERITIES = ("debug", "info", "warning", "error", "fatal")


class ItemError(ValueError):
    """A peer item that does not fit the local schema."""


def _str(obj: dict[str, Any], key: str, required: bool = True) -> str | None:
    value = obj.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise ItemError(f"'{key}' must be a string")
    return value


def _bool(obj: dict[str, Any], key: str, default: bool | None = None) -> bool | None:
    value = obj.get(key, default)
    if value is not None and not isinstance(value, bool):
        raise ItemError(f"'{key}' must be a boolean")
    return value


def _dict(obj: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ItemError(f"'{key}' must be an object")
    return value


def _ids(obj: dict[str, Any], key: str) -> list[str] | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ItemError(f"'{key}' must be a list of strings")
    return list(value)


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


def topic_of(data_id: str) -> str:
    """The topic path of a data item id: the id itself, or what follows `<member>:` (a site
    primary qualified it by rule 4: the topic came from several of its robots)."""
    if data_id.startswith("/"):
        return data_id
    member, sep, topic = data_id.partition(":")
    return topic if sep and member else data_id


def data_item(raw: dict[str, Any], xv: str) -> dict[str, Any]:
    """A data list item."""
    item_id = _str(raw, "id")
    assert item_id is not None
    if not topic_of(item_id).startswith("/"):
        raise ItemError("'id' must be a topic path or `<member>:<topic path>`")
    out: dict[str, Any] = {"id": item_id, "name": _str(raw, "name"),
                           "category": _str(raw, "category", False) or "currentData"}
    vin = _dict(raw, xv) or {}
    vout: dict[str, Any] = {}
    ros2 = _dict(vin, "ros2")
    if ros2 is not None:
        vout["ros2"] = {k: _str(ros2, k) for k in ("direction", "topic", "type")}
    vout["member_ids"] = _ids(vin, "member_ids") or []
    info = _dict(vin, "type_info")
    if info is not None:
        vout["type_info"] = {"schema": _dict(info, "schema") or {},
                             "default_value": info.get("default_value")}
    out[xv] = vout
    return out


def operation_item(raw: dict[str, Any], xv: str) -> dict[str, Any]:
    """An operation list item (its middleware path is required: ids are recomputed from it)."""
    vin = _dict(raw, xv)
    if vin is None:
        raise ItemError(f"'{xv}' is missing")
    kind = _str(vin, "ros2_kind")
    if kind not in ("service", "action"):
        raise ItemError("'ros2_kind' must be service or action")
    path = _str(vin, f"ros2_{kind}")
    assert path is not None
    if not path.startswith("/"):
        raise ItemError(f"'ros2_{kind}' must be a path")
    vout: dict[str, Any] = {"ros2_kind": kind, f"ros2_{kind}": path,
                            "ros2_type": _str(vin, "ros2_type"),
                            "member_ids": _ids(vin, "member_ids") or []}
    info = _dict(vin, "type_info")
    if info is not None:
        vout["type_info"] = info
    out: dict[str, Any] = {
        "id": _str(raw, "id"), "name": _str(raw, "name"),
        "proximity_proof_required": bool(_bool(raw, "proximity_proof_required", False)),
        "asynchronous_execution": bool(_bool(raw, "asynchronous_execution", kind == "action")),
        "type": kind,
    }
    _put(out, f"{kind}_type", _str(raw, f"{kind}_type", False))
    _put(out, "schema", _dict(raw, "schema"))
    out[xv] = vout
    return out


def configuration_item(raw: dict[str, Any], xv: str) -> dict[str, Any]:
    """A configuration (parameter) list item."""
    if "value" not in raw:
        raise ItemError("'value' is missing")
    out: dict[str, Any] = {"id": _str(raw, "id"), "name": _str(raw, "name"),
                           "type": _str(raw, "type", False) or "parameter",
                           "value": raw["value"]}
    _put(out, "description", _str(raw, "description", False))
    vin = _dict(raw, xv) or {}
    vout: dict[str, Any] = {}
    ros2 = _dict(vin, "ros2")
    if ros2 is not None:
        vout["ros2"] = {k: _str(ros2, k) for k in ("node", "parameter", "type")}
    _put(vout, "read_only", _bool(vin, "read_only"))
    if "default_value" in vin:
        vout["default_value"] = vin["default_value"]
    if "range" in vin:
        vout["range"] = vin["range"]
    _put(vout, "member_ids", _ids(vin, "member_ids"))
    out[xv] = vout
    return out


def log_entry(raw: dict[str, Any], xv: str) -> dict[str, Any]:
    """A log entry."""
    severity = _str(raw, "severity")
    if severity not in SEVERITIES:
        raise ItemError(f"'severity' must be one of {', '.join(SEVERITIES)}")
    ctx = _dict(raw, "context")
    if ctx is None:
        raise ItemError("'context' is missing")
    context: dict[str, Any] = {"node": _str(ctx, "node")}
    _put(context, "function", _str(ctx, "function", False))
    _put(context, "file", _str(ctx, "file", False))
    line = ctx.get("line")
    if line is not None:
        if not isinstance(line, int) or isinstance(line, bool):
            raise ItemError("'context.line' must be an integer")
        context["line"] = line
    return {"id": _str(raw, "id"), "timestamp": _str(raw, "timestamp"), "severity": severity,
            "message": _str(raw, "message"), "context": context}


_FAULT_XV_STR = ("status", "first_occurrence", "last_occurrence", "cleared_at", "entity_type",
                 "entity_id")


def _severity(raw: dict[str, Any]) -> str | int:
    # A label (spec profile) or the integer 0-3 (medkit profile: gateway/faults/wire.py).
    value = raw.get("severity")
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 3:
        return value
    return _str(raw, "severity") or ""


# Top-level fields every profile adds beside the spec's (gateway/faults/wire.py).
_FAULT_REF_FIELDS: dict[str, type | tuple[type, ...]] = {"severity_label": str, "description": str, "first_occurred": (int, float),
                     "last_occurred": (int, float), "last_passed": (int, float), "status": str,
                     "occurrence_count": int}


def fault_item(raw: dict[str, Any], xv: str) -> dict[str, Any]:
    """A fault list item."""
    out: dict[str, Any] = {"fault_code": _str(raw, "fault_code"),
                           "severity": _severity(raw),
                           "message": _str(raw, "message", False) or "",
                           "timestamp": _str(raw, "timestamp", False) or "",
                           "source": _str(raw, "source", False) or ""}
    for key, typ in _FAULT_REF_FIELDS.items():
        value = raw.get(key)
        if isinstance(value, typ) and not isinstance(value, bool):
            out[key] = value
    _put(out, "reporting_sources", _ids(raw, "reporting_sources"))
    vin = _dict(raw, xv) or {}
    vout: dict[str, Any] = {}
    for key in _FAULT_XV_STR:
        _put(vout, key, _str(vin, key, False))
    for key in ("severity_level", "occurrence_count"):
        value = vin.get(key)
        if value is not None:
            if not isinstance(value, int) or isinstance(value, bool):
                raise ItemError(f"'{key}' must be an integer")
            vout[key] = value
    _put(vout, "reporting_sources", _ids(vin, "reporting_sources"))
    out[xv] = vout
    return out


def version_item(raw: dict[str, Any], xv: str) -> dict[str, Any]:
    """A version-info item."""
    info = _dict(raw, "vendor_info")
    if info is None:
        raise ItemError("'vendor_info' is missing")
    return {"version": _str(raw, "version"), "base_uri": _str(raw, "base_uri"),
            "vendor_info": {"version": _str(info, "version"), "name": _str(info, "name")}}


Reserializer = Callable[[dict[str, Any], str], dict[str, Any]]
SCHEMAS: dict[str, Reserializer] = {
    "data": data_item,
    "operations": operation_item,
    "configurations": configuration_item,
    "logs": log_entry,
    "faults": fault_item,
    "version-info": version_item,
}


def source_id(raw: Any) -> str | None:
    """Best-effort id of a dropped item."""
    if isinstance(raw, dict):
        for key in ("id", "fault_code", "version"):
            value = raw.get(key)
            if isinstance(value, (str, int)) and not isinstance(value, bool):
                return str(value)
    return None


MAX_PEER_PATH = 8  # levels of primaries an item's path may name


def _peer_marks(raw: dict[str, Any], item: dict[str, Any], xv: str) -> None:
    """Keep the marks a primary below put on the item (a site: the robot it came from), so
    combine.mark_peer can extend the path; anything else there is dropped."""
    vin = raw.get(xv)
    if not isinstance(vin, dict):
        return
    path, peer = vin.get("peer_path"), vin.get("peer")
    if isinstance(path, list) and 0 < len(path) <= MAX_PEER_PATH \
            and all(isinstance(p, str) for p in path):
        item.setdefault(xv, {})["peer_path"] = list(path)
    elif isinstance(peer, str):
        item.setdefault(xv, {})["peer"] = peer


def reserialize(collection: str, raws: list[Any], xv: str, peer: str
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(valid items rebuilt, dropped entries with the peer, source_id and error)."""
    schema = SCHEMAS[collection]
    kept: list[dict[str, Any]] = []
    dropped: list[dict[str, Any]] = []
    for raw in raws:
        try:
            if not isinstance(raw, dict):
                raise ItemError("item is not an object")
            item = schema(raw, xv)
            if collection in ("logs", "faults", "version-info"):
                _peer_marks(raw, item, xv)
            kept.append(item)
        except ItemError as exc:
            entry: dict[str, Any] = {"peer": peer, "error": str(exc)}
            _put(entry, "source_id", source_id(raw))
            dropped.append(entry)
    return kept, dropped
