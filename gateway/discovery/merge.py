"""Layer merge policies: which layer owns which field group of an entity both declare (pure).

Layers in order: manifest, then runtime. Per field group each layer has a policy
(authoritative 2 > enrichment 1 > fallback 0). The first layer owns every group; a later
layer with a higher policy replaces the group's non-empty fields, a lower one only fills its
gaps, an equal one fills gaps (and records a conflict when both are authoritative).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..model.entities import Entity

GROUPS = ("identity", "hierarchy", "live_data", "status", "metadata")
PRIORITY = {"authoritative": 2, "enrichment": 1, "fallback": 0}
DEFAULTS = {
    "manifest": {"identity": "authoritative", "hierarchy": "authoritative",
                 "live_data": "enrichment", "status": "fallback", "metadata": "authoritative"},
    "runtime": {"identity": "fallback", "hierarchy": "fallback", "live_data": "authoritative",
                "status": "authoritative", "metadata": "enrichment"},
}
# App fields per group; live_data and status are then decided by linking (it runs after).
SCALARS = {"identity": ("name", "description"), "hierarchy": ("component",),
           "metadata": ("binding",)}
COLLECTIONS = {"identity": ("tags",), "hierarchy": ("depends_on",)}


@dataclass(frozen=True)
class Policies:
    """Policy per layer and group."""

    layers: dict[str, dict[str, str]] = field(default_factory=lambda: {
        k: dict(v) for k, v in DEFAULTS.items()})


def policies(overrides: Mapping[str, object], allow_manifest_override: bool = True
             ) -> tuple[Policies, list[str]]:
    """Policies from `<layer>.<group>` overrides; invalid entries are warned about, ignored."""
    layers = {k: dict(v) for k, v in DEFAULTS.items()}
    warnings: list[str] = []
    if not allow_manifest_override:  # demote the manifest, then explicit overrides apply
        layers["manifest"] = {g: "fallback" for g in GROUPS}
    for key, value in overrides.items():
        layer, _, group = key.partition(".")
        text = str(value or "").lower()
        if not text:
            continue
        if layer not in layers or group not in GROUPS or text not in PRIORITY:
            warnings.append(f"setting 'discovery.merge_pipeline.layers.{key}': {value!r} "
                            f"ignored (layers manifest|runtime, groups {'|'.join(GROUPS)}, "
                            f"policies {'|'.join(PRIORITY)})")
            continue
        layers[layer][group] = text
    return Policies(layers), warnings


def merge_app(app: Entity, other: Entity, pol: Policies, conflicts: list[dict[str, str]],
              owner: str = "manifest", layer: str = "runtime") -> None:
    """Merge a later layer's app into the owner's (in place), group by group."""
    for group in GROUPS:
        mine = PRIORITY[pol.layers[owner][group]]
        theirs = PRIORITY[pol.layers[layer][group]]
        if mine == theirs == PRIORITY["authoritative"]:
            conflicts.append({"entity_id": app.id, "field_group": group,
                              "winning_layer": owner, "losing_layer": layer})
        for attr in SCALARS.get(group, ()):
            value = getattr(other, attr)
            if value and (theirs > mine or not getattr(app, attr)):
                setattr(app, attr, value)
        for attr in COLLECTIONS.get(group, ()):
            values = getattr(other, attr)
            if theirs > mine and values:
                setattr(app, attr, list(values))
            elif theirs == mine < PRIORITY["authoritative"]:
                setattr(app, attr, list(dict.fromkeys([*getattr(app, attr), *values])))
