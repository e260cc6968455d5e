"""Relationship answers of an app: its host component and its area, or what is missing (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from .entities import Entity, EntitySet


@dataclass(frozen=True)
class Missing:
    """A reference that cannot be resolved: the kind word, the id, a dangling component."""

    type: str
    id: str
    unresolved_component: str = ""


def is_located_on(es: EntitySet, app: Entity) -> list[Entity | Missing]:
    """0 items without a host; the component; or the component id marked missing."""
    if not app.component:
        return []
    comp = es.components.get(app.component)
    return [comp if comp is not None else Missing("component", app.component)]


def belongs_to(es: EntitySet, app: Entity) -> list[Entity | Missing]:
    """0 items without a host or area; the area; the area missing; or the host missing."""
    if not app.component:
        return []
    comp = es.components.get(app.component)
    if comp is None:
        return [Missing("area", "", unresolved_component=app.component)]
    if not comp.area:
        return []
    area = es.areas.get(comp.area)
    return [area if area is not None else Missing("area", comp.area)]
