"""Freeze frames: which topics a confirming fault captures, and the frame entries (pure)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .reporter import ACK_TOPIC, REPORT_TOPIC

ENTITY_DEFAULT_MAX_TOPICS = 16
# log and parameter-event topics (spec), and the fault transport itself
NEVER_CAPTURED = frozenset({"/rosout", "/parameter_events", REPORT_TOPIC, ACK_TOPIC})


class SnapshotConfigError(ValueError):
    """A snapshot config file that cannot be used; the message names the problem."""


def _topics(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [t for t in value.split(",") if t.strip()]
    if not isinstance(value, (list, tuple)):
        raise SnapshotConfigError(f"{where}: expected a list of topics, got {value!r}")
    return tuple(str(t).strip() for t in value)


@dataclass(frozen=True)
class SnapshotConfig:
    """Exact codes, then regex patterns (first match wins), then default topics."""

    fault_specific: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    patterns: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = ()
    default_topics: tuple[str, ...] = ()
    entity_default: bool = True


def parse_config(tree: Any, default_topics: Any = None,
                 entity_default: bool = True) -> SnapshotConfig:
    """A SnapshotConfig from a config file tree; default_topics (setting) wins over the file's."""
    tree = tree or {}
    if not isinstance(tree, Mapping):
        raise SnapshotConfigError("the snapshot config must be a mapping")
    specific = {str(code): _topics(v, f"fault_specific.{code}")
                for code, v in (tree.get("fault_specific") or {}).items()}
    patterns = []
    for pattern, topics in (tree.get("patterns") or {}).items():
        try:
            rx = re.compile(str(pattern))
        except re.error as exc:
            raise SnapshotConfigError(f"patterns: {pattern!r} is not a regex: {exc}") from None
        patterns.append((rx, _topics(topics, f"patterns.{pattern}")))
    defaults = _topics(default_topics, "snapshots.default_topics") if default_topics else ()
    if not defaults:
        defaults = _topics(tree.get("default_topics") or [], "default_topics")
    return SnapshotConfig(specific, tuple(patterns), defaults, entity_default)


def load_config(path: str | Path | None, default_topics: Any = None,
                entity_default: bool = True) -> SnapshotConfig:
    """Read snapshots.config_file (may be empty) and combine it with the settings."""
    tree: Any = {}
    if path:
        try:
            tree = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise SnapshotConfigError(f"cannot read {path}: {exc}") from None
    return parse_config(tree, default_topics, entity_default)


def entity_default_topics(own_topics: Iterable[str]) -> list[str]:
    """The reporting node's own topics, at most 16, never /rosout or /parameter_events."""
    out: list[str] = []
    for topic in own_topics:
        hidden = any(part.startswith("_") for part in topic.split("/") if part)
        if topic in NEVER_CAPTURED or hidden or topic in out:
            continue
        out.append(topic)
        if len(out) == ENTITY_DEFAULT_MAX_TOPICS:
            break
    return out


def select_topics(code: str, cfg: SnapshotConfig,
                  own_topics: Iterable[str] = ()) -> tuple[list[str], str]:
    """Topics to capture for a fault code and which rule chose them."""
    if code in cfg.fault_specific:
        return list(cfg.fault_specific[code]), "fault_specific"
    for rx, topics in cfg.patterns:
        if rx.fullmatch(code):
            return list(topics), "pattern"
    if cfg.default_topics:
        return list(cfg.default_topics), "default_topics"
    if cfg.entity_default:
        return entity_default_topics(own_topics), "entity_default"
    return [], "none"


def primary_value(message: Any) -> Any:
    """The frame's `data`: a lone field or a `data` field as a scalar, else the whole message."""
    if isinstance(message, dict):
        if len(message) == 1:
            return next(iter(message.values()))
        if "data" in message and not isinstance(message["data"], (dict, list)):
            return message["data"]
    return message


def stored_frame(topic: str, message_type: str, message: Any, captured_ns: int,
                 origin: str | None = None) -> dict[str, Any]:
    """A captured frame as the store keeps it (vendor-neutral)."""
    frame: dict[str, Any] = {"topic": topic, "message_type": message_type, "message": message,
                             "captured_ns": captured_ns}
    if origin:
        frame["origin"] = origin
    return frame


def freeze_frame(xv: str, frame: Mapping[str, Any], iso: Any) -> dict[str, Any]:
    """The `freeze_frame` snapshot entry of a stored frame; iso formats epoch ns."""
    vendor: dict[str, Any] = {"topic": frame["topic"], "message_type": frame["message_type"],
                              "full_data": frame["message"],
                              "captured_at": iso(frame["captured_ns"])}
    if frame.get("origin"):
        vendor["capture_origin"] = frame["origin"]
    return {"type": "freeze_frame", "name": frame["topic"],
            "data": primary_value(frame["message"]), xv: vendor}

