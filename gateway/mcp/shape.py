"""Concise, bounded answers for an agent: REST bodies in, small JSON-ready dicts out (pure)."""

from __future__ import annotations

from collections import Counter
from typing import Any

MAX_LIST = 20  # list elements kept by clip()
MAX_STR = 300  # characters kept of one string
MAX_DEPTH = 6
MAX_KEYS = 40


def xv(item: Any) -> dict[str, Any]:
    """The item's vendor extension (`x-<vendor>`), or {}."""
    if isinstance(item, dict):
        for key, value in item.items():
            if key.startswith("x-") and isinstance(value, dict):
                return value
    return {}


def clip(value: Any, depth: int = 0) -> Any:
    """A bounded copy: long lists and strings cut with a marker, deep nesting summarized."""
    if isinstance(value, str):
        return value if len(value) <= MAX_STR else value[:MAX_STR] + f"... ({len(value)} chars)"
    if isinstance(value, list):
        if depth >= MAX_DEPTH:
            return f"[{len(value)} elements]"
        out = [clip(v, depth + 1) for v in value[:MAX_LIST]]
        if len(value) > MAX_LIST:
            out.append(f"... {len(value) - MAX_LIST} more of {len(value)}")
        return out
    if isinstance(value, dict):
        if depth >= MAX_DEPTH:
            return f"{{{len(value)} keys}}"
        keys = list(value)[:MAX_KEYS]
        out_d = {k: clip(value[k], depth + 1) for k in keys}
        if len(value) > MAX_KEYS:
            out_d["..."] = f"{len(value) - MAX_KEYS} more keys"
        return out_d
    return value


def page(items: list[Any], offset: int, limit: int) -> dict[str, Any]:
    """One page of a list: items, total and the next offset (None at the end)."""
    offset = max(0, offset)
    chunk = items[offset:offset + max(1, limit)]
    end = offset + len(chunk)
    return {"total": len(items), "offset": offset, "items": chunk,
            "next_offset": end if end < len(items) else None}


def items_of(body: Any) -> list[Any]:
    """The `items` of a collection answer."""
    if isinstance(body, dict) and isinstance(body.get("items"), list):
        return list(body["items"])
    return []


def partial_note(body: Any) -> dict[str, Any]:
    """`failed_peers` of a merged answer that lacks some robots (else {})."""
    ext = xv(body)
    failed = ext.get("failed_peers") or (body.get("failed_peers") if isinstance(body, dict)
                                         else None)
    return {"failed_robots": failed} if failed else {}


def entity_summary(item: dict[str, Any], kind: str | None = None) -> dict[str, Any]:
    """One entity: its path, name, online state and where it runs."""
    ext = xv(item)
    etype = kind or {"app": "apps", "component": "components", "area": "areas",
                     "function": "functions"}.get(str(item.get("type")), "apps")
    out: dict[str, Any] = {"entity": f"{etype}/{item.get('id')}", "name": item.get("name")}
    if "is_online" in ext:
        out["online"] = ext["is_online"]
    for key in ("component_id", "gateway", "peer"):
        if ext.get(key):
            out[key.replace("_id", "")] = ext[key]
    contributors = [c for c in ext.get("contributors") or [] if c != "local"]
    if contributors:
        out["robots"] = contributors
    node = (ext.get("ros2") or {}).get("node")
    if node:
        out["node"] = node
    return out


def entity_detail(body: dict[str, Any]) -> dict[str, Any]:
    """An entity's detail: summary plus capability names."""
    out = entity_summary(body)
    out["capabilities"] = [c.get("name") for c in body.get("capabilities") or []
                           if isinstance(c, dict)]
    for key in ("description", "translation_id"):
        if body.get(key):
            out[key] = body[key]
    return out


def robot_of(fault: dict[str, Any]) -> str:
    """The robot (peer gateway) a fault item came from; `local` for the serving gateway."""
    return str(xv(fault).get("peer") or "local")


def severity_of(fault: dict[str, Any]) -> str:
    """The severity label (ERROR, WARN, ...)."""
    label = fault.get("severity_label") or fault.get("severity")
    return str(label).upper() if label is not None else "UNKNOWN"


def fault_summary(fault: dict[str, Any]) -> dict[str, Any]:
    """One fault list item: code, severity, status, message, sources, robot, counts."""
    ext = xv(fault)
    out: dict[str, Any] = {
        "code": fault.get("fault_code") or fault.get("code"),
        "severity": severity_of(fault),
        "status": fault.get("status") or ext.get("status"),
        "message": clip(fault.get("message") or fault.get("description") or ""),
        "sources": (fault.get("reporting_sources") or ext.get("reporting_sources")
                    or ([fault["source"]] if fault.get("source") else []))[:5],
        "occurrences": fault.get("occurrence_count") or ext.get("occurrence_count"),
        "last": ext.get("last_occurrence") or fault.get("timestamp"),
        "robot": robot_of(fault),
    }
    return {k: v for k, v in out.items() if v not in (None, [], "")}


def fault_matches(fault: dict[str, Any], severity: str | None, robot: str | None) -> bool:
    """Client-side filters the REST query has no parameter for."""
    if severity and severity_of(fault) != severity.upper():
        return False
    return not (robot and robot_of(fault) != robot)


def snapshot_summary(snap: dict[str, Any]) -> dict[str, Any]:
    """A freeze frame or rosbag snapshot, its data clipped."""
    out = {k: v for k, v in snap.items() if k != "data" and not k.startswith("x-")}
    if "data" in snap:
        out["data"] = clip(snap["data"])
    return clip(out)


def fault_detail(body: dict[str, Any]) -> dict[str, Any]:
    """Fault detail: status flags, extended data, freeze frames (clipped), recordings."""
    item = body.get("item") or {}
    env = body.get("environment_data") or {}
    snaps = [s for s in env.get("snapshots") or [] if isinstance(s, dict)]
    out: dict[str, Any] = {
        "code": item.get("code"), "name": clip(item.get("fault_name")),
        "severity": item.get("severity"), "status": item.get("status"),
        "extended_data": clip(env.get("extended_data_records") or {}),
        "freeze_frames": [snapshot_summary(s) for s in snaps
                          if s.get("type") != "rosbag"][:10],
        "recordings": [snapshot_summary(s) for s in snaps if s.get("type") == "rosbag"][:10],
    }
    ext = xv(body)
    for key in ("correlation", "root_cause", "symptoms", "reporting_sources", "peer"):
        if ext.get(key):
            out[key] = clip(ext[key])
    return out


def data_summary(item: dict[str, Any]) -> dict[str, Any]:
    """A data item: id, category, ROS type and direction."""
    ros = xv(item).get("ros2") or {}
    out = {"id": item.get("id"), "category": item.get("category"), "type": ros.get("type"),
           "direction": ros.get("direction")}
    return {k: v for k, v in out.items() if v is not None}


def operation_summary(item: dict[str, Any]) -> dict[str, Any]:
    """An operation: id, kind, ROS type, request shape."""
    ext = xv(item)
    schema = item.get("schema") or {}
    out = {"id": item.get("id"), "kind": item.get("type") or ext.get("ros2_kind"),
           "type": item.get("service_type") or item.get("action_type") or ext.get("ros2_type"),
           "asynchronous": item.get("asynchronous_execution"),
           "request": clip((schema.get("request") or schema.get("goal"))
                          if isinstance(schema, dict) else None)}
    return {k: v for k, v in out.items() if v is not None}


def configuration_summary(item: dict[str, Any]) -> dict[str, Any]:
    """A configuration (parameter): id, value, type, read-only flag."""
    ext = xv(item)
    ros = ext.get("ros2") or {}
    out = {"id": item.get("id"), "value": clip(item.get("value", item.get("data"))),
           "type": ros.get("type"), "read_only": ext.get("read_only")}
    return {k: v for k, v in out.items() if v is not None}


def log_summary(item: dict[str, Any]) -> dict[str, Any]:
    """A log entry: time, severity, message, node."""
    ctx = item.get("context") or {}
    out = {"time": item.get("timestamp"), "severity": item.get("severity"),
           "message": clip(item.get("message")), "node": ctx.get("node"),
           "robot": xv(item).get("peer")}
    return {k: v for k, v in out.items() if v is not None}


def recording_summary(item: dict[str, Any]) -> dict[str, Any]:
    """A bulk-data descriptor: id, name, size, created, faults, duration."""
    ext = xv(item)
    out = {"id": item.get("id"), "name": item.get("name"), "size": item.get("size"),
           "created": item.get("creation_date"), "fault_codes": ext.get("fault_codes"),
           "duration_sec": ext.get("duration_sec"), "format": ext.get("format")}
    return {k: v for k, v in out.items() if v is not None}


def rosbag_snapshot_summary(snap: dict[str, Any], rec_id: str, code: str) -> dict[str, Any]:
    """A fault detail's rosbag entry as a recording summary."""
    out = {"id": rec_id, "name": snap.get("name"), "size": snap.get("size_bytes"),
           "created": xv(snap).get("captured_at"), "fault_codes": [code],
           "duration_sec": snap.get("duration_sec"), "format": snap.get("format"),
           "bulk_data_uri": snap.get("bulk_data_uri"), "listed_by": "fault detail"}
    return {k: v for k, v in out.items() if v is not None}


def health_summary(body: dict[str, Any]) -> dict[str, Any]:
    """/health in brief: status, readiness, warnings, peers."""
    warnings = [clip(w.get("message") if isinstance(w, dict) else w)
                for w in body.get("warnings") or []]
    out: dict[str, Any] = {"status": body.get("status"), "ready": body.get("ready"),
                           "warnings": warnings[:MAX_LIST]}
    if len(warnings) > MAX_LIST:
        out["warnings_total"] = len(warnings)
    peers = body.get("peers")
    if isinstance(peers, list):
        out["robots"] = [{"name": p.get("name"), "status": p.get("status"), "url": p.get("url")}
                         for p in peers if isinstance(p, dict)]
    return out


def fleet_status(health: dict[str, Any], faults: list[dict[str, Any]]) -> dict[str, Any]:
    """Robots, online or not, with their active fault counts by severity."""
    by_robot: dict[str, Counter[str]] = {}
    for fault in faults:
        by_robot.setdefault(robot_of(fault), Counter())[severity_of(fault)] += 1
    robots = []
    peers = [p for p in health.get("peers") or [] if isinstance(p, dict)]
    names = [str(p.get("name")) for p in peers]
    for peer in peers:
        name = str(peer.get("name"))
        counts = by_robot.get(name, Counter())
        robots.append({"robot": name, "online": peer.get("status") == "online",
                       "status": peer.get("status"), "faults": sum(counts.values()),
                       "by_severity": dict(counts)})
    local = by_robot.get("local", Counter())
    others = {r: c for r, c in by_robot.items() if r != "local" and r not in names}
    out: dict[str, Any] = {"gateway_status": health.get("status"),
                           "robots": robots, "total_faults": len(faults),
                           "local_faults": sum(local.values())}
    if others:  # robots behind a site primary, known by their faults only
        out["other_sources"] = {r: sum(c.values()) for r, c in others.items()}
    return out
