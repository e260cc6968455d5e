"""Unknown keys in a manifest's entities: found with a suggestion, warned about (pure logic).

The reference ignores keys it does not read; a misspelt key (`is_locatd_on`) then silently
changes the model. The loader logs each one with its path and the closest valid key, and
goes on (facts-features.md asks for warnings on unknown top-level and fragment keys and says
nothing of strict rejection). Identity blocks and `assets` entries are not checked: there any
other key is an identity `extra` by design.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..settings.suggest import closest_key

_COMMON = ("id", "name", "description", "tags", "translation_id")
AREA = (*_COMMON, "namespace", "parent_area", "parent_area_id", "subareas", "category")
COMPONENT = (*_COMMON, "type", "area", "namespace", "variant", "parent_component_id",
             "depends_on", "external", "identity", "lock", "scripts", "subcomponents")
APP = (*_COMMON, "is_located_on", "depends_on", "external", "ros_binding", "lock", "scripts")
FUNCTION = (*_COMMON, "hosted_by", "hosts", "depends_on")
ROS_BINDING = ("node_name", "namespace", "topic_namespace")
LOCK = ("required_scopes", "breakable", "max_expiration")
SCRIPT = ("id", "name", "description", "path", "format", "timeout_sec", "entity_filter",
          "env", "args", "parameters_schema")
METADATA = ("name", "version", "description", "created_at")
CONFIG = ("unmanifested_nodes", "inherit_runtime_resources", "allow_manifest_override")


@dataclass(frozen=True)
class UnknownKey:
    """One key the loader does not read: where, and the valid key it most likely means."""

    path: str  # e.g. apps[temp_sensor].is_locatd_on
    key: str
    suggestion: str | None
    line: int = 0

    def message(self, file: str) -> str:
        """The log line."""
        at = f"{file}:{self.line}" if self.line else file
        hint = f"; did you mean '{self.suggestion}'?" if self.suggestion else ""
        return f"manifest {at}: unknown key '{self.path}' ignored{hint}"


def _check(raw: Any, valid: tuple[str, ...], where: str) -> Iterator[UnknownKey]:
    if not isinstance(raw, dict):
        return
    for key in raw:
        if key not in valid:
            yield UnknownKey(f"{where}.{key}", str(key), closest_key(str(key), valid),
                             getattr(raw, "line", 0))


def _label(block: str, index: int, raw: Any) -> str:
    eid = raw.get("id") if isinstance(raw, dict) else None
    return f"{block}[{eid if isinstance(eid, (str, int)) else index}]"


def _entity(raw: Any, where: str, valid: tuple[str, ...]) -> Iterator[UnknownKey]:
    yield from _check(raw, valid, where)
    if not isinstance(raw, dict):
        return
    if "ros_binding" in valid:
        yield from _check(raw.get("ros_binding"), ROS_BINDING, where + ".ros_binding")
    if "lock" in valid:
        yield from _check(raw.get("lock"), LOCK, where + ".lock")
    if "scripts" in valid:
        yield from _list(raw.get("scripts"), where + ".scripts", SCRIPT)
    if "subareas" in valid:
        yield from _list(raw.get("subareas"), where + ".subareas", AREA)
    if "subcomponents" in valid:
        yield from _list(raw.get("subcomponents"), where + ".subcomponents", COMPONENT)


def _list(items: Any, block: str, valid: tuple[str, ...]) -> Iterator[UnknownKey]:
    if not isinstance(items, list):
        return
    for index, raw in enumerate(items):
        yield from _entity(raw, _label(block, index, raw), valid)


def unknown_keys(tree: dict[str, Any]) -> list[UnknownKey]:
    """Unknown keys below the top level of a manifest (or fragment) tree."""
    out: list[UnknownKey] = []
    for block, valid in (("areas", AREA), ("components", COMPONENT), ("apps", APP),
                         ("functions", FUNCTION), ("scripts", SCRIPT)):
        out.extend(_list(tree.get(block), block, valid))
    out.extend(_check(tree.get("metadata"), METADATA, "metadata"))
    for block in ("config", "discovery"):
        out.extend(_check(tree.get(block), CONFIG, block))
    return out


def top_level_hint(key: str, known: tuple[str, ...] | frozenset[str]) -> str:
    """`; did you mean 'x'?` for an unknown top-level key, or nothing."""
    close = closest_key(str(key), known)
    return f"; did you mean '{close}'?" if close else ""
