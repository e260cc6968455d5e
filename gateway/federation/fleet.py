"""The fleet view: the local entity set merged with the peers' (pure).

Spec "Aggregation behaviour" 1: areas, functions and components merge by id; apps keep their
local id, and a remote app whose id is also used locally or by another peer becomes
`<peer>__<id>` (every colliding remote copy, so the result does not depend on peer order).
Each merged entity remembers its contributors (`local` first, then peers) and the id it has
on each, which is what routing a forward and fanning out a collection read need.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model.entities import KINDS, Entity, EntitySet
from ..model.identity import merge_identity
from .settings import LOCAL

Key = tuple[str, str]  # (kind, id)


@dataclass(frozen=True)
class Origin:
    """One gateway's contribution to a merged entity: its name and the entity's id there."""

    gateway: str
    remote_id: str
    node_fqn: str | None = None

    @property
    def is_local(self) -> bool:
        """True for this gateway's own contribution."""
        return self.gateway == LOCAL


@dataclass(frozen=True)
class PeerSet:
    """A peer's declared entity set and whether its health check passes."""

    name: str
    entities: EntitySet
    online: bool = True


@dataclass
class FleetView:
    """The merged entity set plus where each entity comes from."""

    entities: EntitySet
    origins: dict[Key, list[Origin]] = field(default_factory=dict)
    offline: frozenset[str] = frozenset()
    app_ids: dict[tuple[str, str], str] = field(default_factory=dict)  # (peer, its id) -> id
    # no entity comes from a peer: nothing is forwarded (a robot that only announces itself)
    local_only: bool = True

    def contributors(self, kind: str, entity_id: str) -> list[str]:
        """Gateways contributing the entity (`local` first)."""
        return [o.gateway for o in self.origins.get((kind, entity_id), ())]

    def peers_of(self, kind: str, entity_id: str) -> list[Origin]:
        """The peers contributing the entity."""
        return [o for o in self.origins.get((kind, entity_id), ()) if not o.is_local]

    def owner(self, kind: str, entity_id: str) -> Origin | None:
        """The peer that alone owns the entity (requests for it are forwarded), else None."""
        origins = self.origins.get((kind, entity_id), ())
        if len(origins) == 1 and not origins[0].is_local:
            return origins[0]
        return None

    def available(self, kind: str, entity_id: str) -> bool:
        """False when every gateway contributing the entity has stopped answering (a peer's
        app is then `is_online: false` too: both come from PeerSet.online, in merge())."""
        origins = self.origins.get((kind, entity_id), ())
        return not origins or any(o.is_local or o.gateway not in self.offline for o in origins)

    def app_origin(self, app_id: str) -> Origin | None:
        """Where an app of the fleet view runs."""
        origins = self.origins.get(("apps", app_id))
        return origins[0] if origins else None

    def fleet_app_id(self, gateway: str, remote_id: str) -> str:
        """The fleet id of an app as a gateway names it (rule 5 re-attribution)."""
        if gateway == LOCAL:
            return remote_id
        return self.app_ids.get((gateway, remote_id), remote_id)


def _copy(entity: Entity, **changes: Any) -> Entity:
    out = dataclasses.replace(entity, **changes)
    out.hosts = list(out.hosts)
    out.depends_on = list(out.depends_on)
    out.identity = dict(out.identity)
    return out


def renamed_apps(local: EntitySet, peers: Sequence[PeerSet]) -> dict[tuple[str, str], str]:
    """(peer, app id) -> fleet app id: `<peer>__<id>` for every remote app id used twice."""
    used = Counter(a for p in peers for a in p.entities.apps)
    out: dict[tuple[str, str], str] = {}
    taken = set(local.apps)
    for p in peers:
        for aid in p.entities.apps:
            fleet_id = aid
            if aid in local.apps or used[aid] > 1:
                fleet_id = f"{p.name}__{aid}"
            n = 2
            base = fleet_id
            while fleet_id in taken:  # a local app literally named `<peer>__<id>`
                fleet_id = f"{base}_{n}"
                n += 1
            taken.add(fleet_id)
            out[(p.name, aid)] = fleet_id
    return out


def _extend_new(items: list[str], held: set[str], more: list[str]) -> None:
    """Append what `held` lacks (in order, once), keeping `held` the set of `items`."""
    for item in more:
        if item not in held:
            held.add(item)
            items.append(item)


def merge(local: EntitySet, peers: Sequence[PeerSet], generation: int) -> FleetView:
    """The fleet view of the local set and the peers' (in the given order)."""
    out = EntitySet(generation=generation)
    origins: dict[Key, list[Origin]] = {}
    for kind in KINDS:
        for eid, entity in local.of(kind).items():
            out.of(kind)[eid] = _copy(entity)
            origins[(kind, eid)] = [Origin(LOCAL, eid, entity.node_fqn)]
    app_ids = renamed_apps(local, peers)
    seen: dict[Key, tuple[set[str], set[str]]] = {}  # hosts and depends_on held, per entity
    for p in peers:
        def mapped(ids: list[str], peer: str = p.name) -> list[str]:
            return [app_ids.get((peer, a), a) for a in ids]

        for aid, app in p.entities.apps.items():
            fid = app_ids[(p.name, aid)]
            # is_online as the peer declared it while the peer answers; false while it does
            # not (its last set is kept): the same peer state as `available` (FleetView)
            out.apps[fid] = _copy(app, id=fid, node_fqn=None, hosts=[],
                                  is_online=app.is_online and p.online)
            origins[("apps", fid)] = [Origin(p.name, aid, app.node_fqn)]
        for kind in ("areas", "components", "functions"):
            for eid, entity in p.entities.of(kind).items():
                have = out.of(kind).get(eid)
                if have is None:
                    out.of(kind)[eid] = _copy(entity, hosts=mapped(entity.hosts))
                    origins[(kind, eid)] = [Origin(p.name, eid)]
                    continue
                # membership by a set per entity: a list test per host made a function every
                # robot hosts O(peers²) per merge (20 ms at 1,000 robots)
                hosts, deps = seen.get((kind, eid)) or seen.setdefault(
                    (kind, eid), (set(have.hosts), set(have.depends_on)))
                _extend_new(have.hosts, hosts, mapped(entity.hosts))
                _extend_new(have.depends_on, deps, entity.depends_on)
                for attr in ("description", "area", "parent"):
                    if not getattr(have, attr) and getattr(entity, attr):
                        setattr(have, attr, getattr(entity, attr))
                if entity.identity:  # nameplates merge per field by source rank
                    have.identity = merge_identity(have.identity, entity.identity)
                origins[(kind, eid)].append(Origin(p.name, eid))
    offline = frozenset(p.name for p in peers if not p.online)
    local_only = all(o.is_local for found in origins.values() for o in found)
    return FleetView(out, origins, offline, app_ids, local_only)


def local_view(local: EntitySet) -> FleetView:
    """The fleet of one: every entity contributed by this gateway alone."""
    return merge(local, (), local.generation)
