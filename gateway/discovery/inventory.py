"""Asset inventory: nameplates, manifest `assets` and the CSV file -> components (pure parsing).

A component's identity is kept in its wire form (camelCase fields, `extra`, `_provenance`
keyed by snake_case name). Rows that cannot be used are skipped with their line number.
"""

from __future__ import annotations

import csv
import io
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..model.entities import Entity
from ..model.identity import merge_identity, wire_identity
from .validate import Issue

if TYPE_CHECKING:
    from .manifest import Manifest

log = logging.getLogger(__name__)

MAX_CSV_BYTES = 1024 * 1024
_ID = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
# CSV columns and asset keys (case-insensitive) -> snake_case identity field
ALIASES = {
    "manufacturer": "manufacturer", "model": "model", "order_code": "order_code",
    "order_number": "order_code", "serial": "serial_number", "serial_number": "serial_number",
    "hardware_rev": "hardware_revision", "hardware_revision": "hardware_revision",
    "hw_rev": "hardware_revision", "firmware": "firmware_version",
    "firmware_version": "firmware_version", "fw": "firmware_version",
    "software_version": "software_version", "endpoint": "network_endpoint",
    "network_endpoint": "network_endpoint", "role": "role",
}
ASSET_STRUCTURAL = ("tags", "parent_component_id", "name", "description", "namespace", "variant",
                    "type", "translation_id", "depends_on", "external", "area", "id")
@dataclass(frozen=True)
class Skipped:
    """A CSV row left out: its line number and why."""

    line: int
    reason: str
    id: str = ""

    def as_dict(self) -> dict[str, Any]:
        """JSON form for /manifest/status."""
        out: dict[str, Any] = {"line": self.line, "reason": self.reason}
        if self.id:
            out["id"] = self.id
        return out


def identity_from(raw: dict[str, Any], source: str, what: str,
                  bad: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Wire identity from snake_case (or alias) keys; `extra` a string map."""
    fields: dict[str, str] = {}
    extra: dict[str, str] = {}
    for key, value in raw.items():
        if value is None or value == "":
            continue
        if key == "extra":
            if isinstance(value, dict):
                extra.update({str(k): str(v) for k, v in value.items() if v not in (None, "")})
            elif bad:
                bad(f"{what}: identity 'extra' must be a map of strings")
            continue
        name = ALIASES.get(str(key).lower())
        if isinstance(value, (dict, list)):
            if bad:
                bad(f"{what}: identity '{key}' must be a string")
            continue
        if name is None:
            extra[str(key)] = str(value)
        else:
            fields[name] = str(value)
    return wire_identity(fields, extra, source)


def _name(identity: dict[str, Any]) -> str:
    return f"{identity.get('manufacturer', '')} {identity.get('model', '')}".strip()


def asset_component(raw: Any, file: str, issues: list[Issue]) -> Entity | None:
    """A manifest `assets` entry as a component with source `inventory`."""
    line = getattr(raw, "line", 0)
    if not isinstance(raw, dict):
        issues.append(Issue("SCHEMA", "error", "asset entry must be a mapping", file, line))
        return None
    eid = str(raw.get("id", ""))
    if not _ID.match(eid):
        issues.append(Issue("SCHEMA", "error", f"asset id {raw.get('id')!r} must be 1-256 "
                            "letters, digits, '_' or '-'", file, line, eid))
        return None
    what = f"asset '{eid}'"

    def bad(message: str) -> None:
        issues.append(Issue("SCHEMA", "error", message, file, line, eid))

    ident_raw = {k: v for k, v in raw.items() if k not in ASSET_STRUCTURAL}
    identity = identity_from(ident_raw, "inventory", what, bad)
    comp = Entity("components", eid, str(raw.get("name") or _name(identity)),
                  source="inventory", identity=identity)
    comp.description = str(raw.get("description") or "")
    comp.area = str(raw["area"]) if raw.get("area") else None
    comp.parent = str(raw["parent_component_id"]) if raw.get("parent_component_id") else None
    comp.namespace = str(raw["namespace"]) if raw.get("namespace") else None
    if comp.namespace:
        comp.attrs["fqn"] = comp.namespace.rstrip("/") + "/" + eid
    deps = raw.get("depends_on") or []
    comp.depends_on = [str(d) for d in deps] if isinstance(deps, list) else [str(deps)]
    tags = raw.get("tags") or []
    comp.tags = [str(t) for t in tags] if isinstance(tags, list) else [str(tags)]
    if isinstance(raw.get("external"), bool):
        comp.external = raw["external"]
    for key in ("variant", "type", "translation_id"):
        if raw.get(key):
            comp.attrs[key] = str(raw[key])
    comp.attrs.update(file=file, line=line)
    return comp


class CsvError(ValueError):
    """The CSV cannot be used at all (no header, no id column)."""


def parse_csv(text: str) -> tuple[list[tuple[int, Entity]], list[Skipped]]:
    """(line, component) per usable row, and the rows skipped; CsvError for a bad header."""
    if text.startswith("\ufeff"):
        text = text[1:]
    reader = csv.reader(io.StringIO(text.replace("\r", "")), skipinitialspace=True)
    header: list[str] | None = None
    rows: list[tuple[int, Entity]] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    start = 1
    try:
        for cells in reader:
            line, start = start, reader.line_num + 1
            cells = [c.strip() for c in cells]
            if not any(cells):
                continue
            if header is None:
                header = [c.strip() for c in cells]
                if "id" not in [h.lower() for h in header]:
                    raise CsvError(f"line {line}: the header has no 'id' column")
                continue
            row = {h: (cells[i] if i < len(cells) else "") for i, h in enumerate(header) if h}
            comp = _row(row, line, skipped, seen)
            if comp is not None:
                rows.append((line, comp))
    except csv.Error as exc:
        raise CsvError(f"line {reader.line_num}: {exc}") from None
    if header is None:
        raise CsvError("no header row")
    return rows, skipped


def _row(row: dict[str, str], line: int, skipped: list[Skipped], seen: set[str]
         ) -> Entity | None:
    lower = {k.lower(): v for k, v in row.items()}
    eid = lower.get("id", "")
    if not eid:
        skipped.append(Skipped(line, f"row {line} skipped (empty id)"))
        return None
    if not _ID.match(eid):
        skipped.append(Skipped(line, f"row {line} skipped (id {eid!r} must be letters, "
                               "digits, '_' or '-')", eid))
        return None
    if eid in seen:
        skipped.append(Skipped(line, f"row {line} skipped (duplicate id '{eid}'; the first "
                               "row wins)", eid))
        return None
    seen.add(eid)
    fields: dict[str, str] = {}
    extra: dict[str, str] = {}
    for key, value in row.items():
        low = key.lower()
        if low in ("id", "area") or not value:
            continue
        name = ALIASES.get(low)
        if name is not None and low != "software_version":
            fields[name] = value
        else:
            extra[key] = value
    identity = wire_identity(fields, extra, "inventory")
    comp = Entity("components", eid, _name(identity), source="inventory", identity=identity)
    comp.area = lower.get("area") or None
    comp.attrs["line"] = line
    return comp


def merge_csv(path: str, m: Manifest, issues: list[Issue]) -> None:
    """Read the CSV into the manifest's components (collisions per the inventory rules)."""
    file = Path(path)
    if not file.exists():
        log.warning("inventory CSV %s does not exist; skipped", path)
        return
    try:
        size = file.stat().st_size
        if size > MAX_CSV_BYTES:
            issues.append(Issue("INVENTORY_CSV", "error", f"file is {size} bytes; the limit is "
                                f"{MAX_CSV_BYTES}", path))
            return
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        issues.append(Issue("INVENTORY_CSV", "error", f"cannot read: {exc}", path))
        return
    try:
        rows, skipped = parse_csv(text)
    except CsvError as exc:
        issues.append(Issue("INVENTORY_CSV", "error", str(exc), path))
        return
    comps = {c.id: c for c in m.components}
    others = {e.id for e in m.areas + m.apps + m.functions} | {s["id"] for s in m.scripts}
    areas = {a.id for a in m.areas}
    for line, comp in rows:
        comp.attrs["file"] = path
        if comp.id in others:
            skipped.append(Skipped(line, f"row {line} skipped (id '{comp.id}' is a manifest "
                                   "entity that is not a component)", comp.id))
            continue
        if comp.area and comp.area not in areas:
            log.warning("inventory CSV %s line %d: unknown area %r; placement dropped", path,
                        line, comp.area)
            comp.area = None
        have = comps.get(comp.id)
        if have is not None:  # manifest definition kept; CSV nameplate fills its gaps
            have.identity = merge_identity(have.identity, comp.identity)
            continue
        m.components.append(comp)
        comps[comp.id] = comp
    for s in skipped:
        log.warning("inventory CSV %s: %s", path, s.reason)
    m.inventory_skipped = skipped
