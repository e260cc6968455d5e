"""The entity model: areas, components, apps and functions, and the set of them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..http.routes import SINGULAR

KINDS = ("areas", "components", "apps", "functions")


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
        return getattr(self, kind)  # type: ignore[no-any-return]

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
        if entity.kind == "apps":
            return [entity]
        if entity.kind in ("components", "functions"):
            ids = list(entity.hosts)
            if entity.kind == "components":
                for sub in self.subcomponents(entity.id):
                    ids.extend(a.id for a in self.member_apps(sub))
            return [self.apps[i] for i in dict.fromkeys(ids) if i in self.apps]
        out: list[Entity] = []
        for comp in self.components.values():
            if comp.area == entity.id:
                out.extend(self.member_apps(comp))
        for sub in self.subareas(entity.id):
            out.extend(self.member_apps(sub))
        return list({a.id: a for a in out}.values())
