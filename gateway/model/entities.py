"""The entity model: areas, components, apps and functions, and the set of them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

KINDS = ("areas", "components", "apps", "functions")
ENTITY_TYPES = KINDS  # the collection words of the URL
ENTITY_PARAM = {
    "areas": "area_id",
    "components": "component_id",
    "apps": "app_id",
    "functions": "function_id",
}
SINGULAR = {"areas": "area", "components": "component", "apps": "app", "functions": "function"}


@dataclass
class Entity:
    """One entity of any of the four types."""

    kind: str  # one of KINDS (the path word)
    id: str
    name: str
    source: str = "heuristic"
    description: str = ""
    # apps
    node_fqn: str | None = None
    namespace: str | None = None
    component: str | None = None  # hosting component (is-located-on)
    is_online: bool = True
    # components
    area: str | None = None
    parent: str | None = None  # parent component (subcomponent) or parent area (subarea)
    hosts: list[str] = field(default_factory=list)  # app ids (components, functions)
    depends_on: list[str] = field(default_factory=list)
    identity: dict[str, Any] = field(default_factory=dict)
    # manifest-declared (docs/manifest.md); empty for runtime entities
    tags: list[str] = field(default_factory=list)
    external: bool | None = None  # tri-state: None = not set
    binding: dict[str, str] | None = None  # apps: ros_binding (node_name, namespace, ...)
    bound_fqn: str | None = None  # apps: the node linked to the app (hybrid)
    lock: dict[str, Any] | None = None  # components/apps: per-entity lock block (for locks)
    scripts: list[dict[str, Any]] = field(default_factory=list)  # per-entity scripts block
    attrs: dict[str, Any] = field(default_factory=dict)  # type, variant, translation_id, fqn

    @property
    def type(self) -> str:
        """Singular type word: area, component, app, function."""
        return SINGULAR[self.kind]

    @property
    def path(self) -> str:
        """Path of the detail resource, without the API prefix."""
        return f"/{self.kind}/{self.id}"


@dataclass
class EntitySet:
    """Every entity, by kind and id, with the generation that produced it."""

    areas: dict[str, Entity] = field(default_factory=dict)
    components: dict[str, Entity] = field(default_factory=dict)
    apps: dict[str, Entity] = field(default_factory=dict)
    functions: dict[str, Entity] = field(default_factory=dict)
    generation: int = 0

    def of(self, kind: str) -> dict[str, Entity]:
        """The entities of one kind."""
        return getattr(self, kind)

    def get(self, kind: str, entity_id: str) -> Entity | None:
        """One entity or None."""
        return self.of(kind).get(entity_id)

    def total(self) -> int:
        """Number of entities of all kinds."""
        return sum(len(self.of(k)) for k in KINDS)

    def subareas(self, area_id: str) -> list[Entity]:
        """Areas whose parent is area_id."""
        return [a for a in self.areas.values() if a.parent == area_id]

    def subcomponents(self, component_id: str) -> list[Entity]:
        """Components whose parent is component_id."""
        return [c for c in self.components.values() if c.parent == component_id]

    def member_apps(self, entity: Entity) -> list[Entity]:
        """Apps whose ROS nodes back the entity (itself, hosted, or under an area)."""
        return self._member_apps(entity, set())

    def _member_apps(self, entity: Entity, seen: set[tuple[str, str]]) -> list[Entity]:
        # `seen` stops a parent cycle (possible only in a merged fleet view) from recursing
        if (entity.kind, entity.id) in seen:
            return []
        seen.add((entity.kind, entity.id))
        if entity.kind == "apps":
            return [entity]
        if entity.kind in ("components", "functions"):
            ids = list(entity.hosts)
            if entity.kind == "components":
                for sub in self.subcomponents(entity.id):
                    ids.extend(a.id for a in self._member_apps(sub, seen))
            return [self.apps[i] for i in dict.fromkeys(ids) if i in self.apps]
        out: list[Entity] = []
        for comp in self.components.values():
            if comp.area == entity.id:
                out.extend(self._member_apps(comp, seen))
        for sub in self.subareas(entity.id):
            out.extend(self._member_apps(sub, seen))
        return list({a.id: a for a in out}.values())
