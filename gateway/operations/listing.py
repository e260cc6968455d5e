"""The operations of an entity: the services and actions of its member apps, with their ids.

Read by the operation handlers and by the OpenAPI documents (which expand an entity's
operation ids).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..http.state import GatewayState
from ..model.entities import Entity
from ..model.items import MemberItem, assign_ids


@dataclass
class OpRef:
    """One service or action as an entity sees it."""

    id: str
    kind: str  # service or action
    path: str
    type: str
    member_ids: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The short name (last path segment)."""
        return self.path.rsplit("/", 1)[-1]


def entity_operations(state: GatewayState, entity: Entity) -> list[OpRef]:
    """Services and actions of the entity's member apps with their ids (cached per generation)."""

    def build() -> list[OpRef]:
        graph = state.cache.graph
        merged: dict[tuple[str, str], OpRef] = {}
        for app in state.cache.entities.member_apps(entity):
            node = graph.node(app.node_fqn) if app.node_fqn else None
            if node is None:
                continue
            for kind, pairs in (("service", node.user_services()), ("action", node.actions)):
                for path, typ in pairs:
                    ref = merged.get((kind, path))
                    if ref is None:
                        ref = merged[(kind, path)] = OpRef("", kind, path, typ)
                    if app.id not in ref.member_ids:
                        ref.member_ids.append(app.id)
        ops = sorted(merged.values(), key=lambda o: (o.path, o.kind))
        items = [MemberItem(o.member_ids[0], o.path) for o in ops]
        for op, assigned in zip(ops, assign_ids(items), strict=True):
            op.id = assigned
        return ops

    return state.cache.body(("operations", entity.kind, entity.id), build)
