"""The nodes whose `/rosout` entries are an entity's logs."""

from __future__ import annotations

from ..http.resource_helpers import local_member_apps
from ..http.state import GatewayState
from ..model.entities import Entity


def members_of(state: GatewayState, entity: Entity) -> tuple[list[str], bool]:
    """(node fqns, prefix match): apps exact, functions their hosts, components/areas prefix."""
    fqns = [a.node_fqn for a in local_member_apps(state, entity) if a.node_fqn]
    return fqns, entity.kind in ("components", "areas")
