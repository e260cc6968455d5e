"""Asset nameplates in wire form (camelCase, `extra`, `_provenance`) and their merge (pure)."""

from __future__ import annotations

from typing import Any

# snake_case identity field -> wire (camelCase) name
IDENTITY_FIELDS = {
    "manufacturer": "manufacturer", "model": "model", "order_code": "orderCode",
    "serial_number": "serialNumber", "hardware_revision": "hardwareRevision",
    "firmware_version": "firmwareVersion", "software_version": "softwareVersion",
    "network_endpoint": "networkEndpoint", "role": "role",
}
# Source ranks for identity merging (highest first); unknown sources rank last.
SOURCE_RANK = ("opcua", "s7", "ethernet_ip", "modbus", "ads", "profinet", "manifest",
               "inventory", "config", "plugin", "runtime", "node", "topic", "heuristic")


def wire_identity(fields: dict[str, str], extra: dict[str, str], source: str) -> dict[str, Any]:
    """camelCase identity with `_provenance` for every populated field."""
    out: dict[str, Any] = {IDENTITY_FIELDS[k]: v for k, v in fields.items() if v}
    prov = {k: source for k, v in fields.items() if v}
    if extra:
        out["extra"] = dict(extra)
        prov.update({f"extra.{k}": source for k in extra})
    if prov:
        out["_provenance"] = prov
    return out


def _rank(source: str) -> int:
    return SOURCE_RANK.index(source) if source in SOURCE_RANK else len(SOURCE_RANK)


def _note(prov: dict[str, str], key: str, source: str | None) -> None:
    if source:
        prov[key] = source
    else:
        prov.pop(key, None)


def merge_identity(have: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Per-field merge: empty fields filled; a set field replaced only by a higher-rank source."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in have.items()}
    if not isinstance(out.get("_provenance"), dict):
        out["_provenance"] = {}
    if not isinstance(out.get("extra", {}), dict):
        out.pop("extra")
    prov: dict[str, str] = out["_provenance"]
    if not isinstance(new.get("_provenance", {}), dict):
        new = {k: v for k, v in new.items() if k != "_provenance"}
    new_prov = new.get("_provenance", {})
    snake_of = {camel: snake for snake, camel in IDENTITY_FIELDS.items()}
    for camel, value in new.items():
        if camel in ("_provenance", "extra"):
            continue
        snake = snake_of.get(camel, camel)
        if camel not in out or _rank(new_prov.get(snake, "")) < _rank(prov.get(snake, "")):
            out[camel] = value
            _note(prov, snake, new_prov.get(snake))
    new_extra = new.get("extra")
    for key, value in (new_extra if isinstance(new_extra, dict) else {}).items():
        extra = out.setdefault("extra", {})
        pkey = f"extra.{key}"
        if key not in extra or _rank(new_prov.get(pkey, "")) < _rank(prov.get(pkey, "")):
            extra[key] = value
            _note(prov, pkey, new_prov.get(pkey))
    if not prov:
        out.pop("_provenance")
    return out
