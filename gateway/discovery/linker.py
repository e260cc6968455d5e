"""Manifest-backed entity sets: manifest_only, and hybrid linking of runtime nodes (pure).

Hybrid: the manifest layer comes first and the runtime layer (one app per node) second.
Each manifest app with a `ros_binding` links to the first matching unbound node (sorted by
FQN); the linked node's runtime app is dropped, since the manifest app stands for it. Nodes
left unbound are orphans, handled by the manifest's `unmanifested_nodes` policy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model.entities import Entity, EntitySet
from . import runtime
from .manifest import Manifest
from .merge import Policies, merge_app, policies

PROTECTED_SOURCES = ("manifest", "inventory")


@dataclass(frozen=True)
class GraphNode:
    """The part of a graph node linking needs: name, namespace and its topics."""

    name: str
    namespace: str
    topics: tuple[str, ...] = ()

    @property
    def fqn(self) -> str:
        """Fully qualified node name."""
        return ("" if self.namespace == "/" else self.namespace.rstrip("/")) + "/" + self.name


@dataclass(frozen=True)
class GapFill:
    """`discovery.merge_pipeline.gap_fill`: which runtime apps may appear."""

    allow_heuristic_apps: bool = True
    allow_heuristic_functions: bool = False
    namespace_whitelist: tuple[str, ...] = ()
    namespace_blacklist: tuple[str, ...] = ()


@dataclass
class Report:
    """Figures of one build, for health `discovery.pipeline` and `linking`."""

    layers: list[str] = field(default_factory=list)
    total_entities: int = 0
    enriched_count: int = 0
    conflicts: list[dict[str, str]] = field(default_factory=list)
    id_collisions: list[str] = field(default_factory=list)
    filtered_by_gap_fill: int = 0
    linked: bool = False  # the linker ran (hybrid with the runtime layer)
    linked_count: int = 0
    orphans: list[str] = field(default_factory=list)  # unbound node FQNs
    binding_conflicts: int = 0
    policy: str = "warn"
    warnings: list[str] = field(default_factory=list)

    def pipeline(self) -> dict[str, Any]:
        """Health `discovery.pipeline`."""
        return {"layers": list(self.layers), "total_entities": self.total_entities,
                "enriched_count": self.enriched_count, "conflict_count": len(self.conflicts),
                "conflicts": list(self.conflicts), "id_collisions": list(self.id_collisions),
                "filtered_by_gap_fill": self.filtered_by_gap_fill}

    def linking(self) -> dict[str, Any]:
        """Health `discovery.linking`."""
        out: dict[str, Any] = {"linked_count": self.linked_count,
                               "orphan_count": len(self.orphans),
                               "binding_conflicts": self.binding_conflicts,
                               "unmanifested_policy": self.policy}
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


def _fresh(e: Entity) -> Entity:
    out = dataclasses.replace(e)
    out.hosts = list(e.hosts)
    out.depends_on = list(e.depends_on)
    out.identity = {k: (dict(v) if isinstance(v, dict) else v) for k, v in e.identity.items()}
    out.tags = list(e.tags)
    out.attrs = dict(e.attrs)
    return out


def _declared(m: Manifest, generation: int) -> EntitySet:
    """The manifest's entities (fresh copies), with component hosts filled from the apps."""
    out = EntitySet(generation=generation)
    for kind in ("areas", "components", "apps", "functions"):
        target = out.of(kind)
        for e in getattr(m, kind):
            target[e.id] = _fresh(e)
    return out


def _finish(out: EntitySet) -> None:
    """Component hosts from the apps' `is_located_on`; function hosts naming a component
    expand to that component's apps."""
    for comp in out.components.values():
        comp.hosts = []
    for app in out.apps.values():
        host = out.components.get(app.component or "")
        if host is not None:
            host.hosts.append(app.id)
    for func in out.functions.values():
        hosts: list[str] = []
        for h in func.hosts:
            if h in out.components and h not in out.apps:
                hosts.extend(out.components[h].hosts)
            else:
                hosts.append(h)
        func.hosts = list(dict.fromkeys(hosts))


def manifest_only(m: Manifest, generation: int) -> tuple[EntitySet, Report]:
    """Exactly the manifest's entities (plus inventory); apps stay offline."""
    out = _declared(m, generation)
    _finish(out)
    report = Report(layers=["manifest"], total_entities=out.total(), policy=m.config.
                    unmanifested_nodes)
    return out, report


def namespace_matches(namespace: str, pattern: str) -> bool:
    """`*` any; else equal to the pattern or below it at a `/` boundary (empty pattern = `/`)."""
    if pattern == "*":
        return True
    pattern = pattern or "/"
    if pattern == "/":
        return namespace == "/"
    pattern = pattern.rstrip("/")
    return namespace == pattern or namespace.startswith(pattern + "/")


def _under(topic: str, prefix: str) -> bool:
    prefix = prefix.rstrip("/")
    return topic == prefix or topic.startswith(prefix + "/")


def matches(binding: dict[str, str], node: GraphNode) -> bool:
    """Whether a node satisfies an app's ros_binding."""
    name = binding.get("node_name", "")
    if name and name == node.name and namespace_matches(node.namespace,
                                                        binding.get("namespace", "*")):
        return True
    topic_ns = binding.get("topic_namespace", "")
    return bool(topic_ns) and any(_under(t, topic_ns) for t in node.topics)


def _gap_filtered(node: GraphNode, gap: GapFill) -> bool:
    if gap.namespace_whitelist and not any(namespace_matches(node.namespace, w)
                                           for w in gap.namespace_whitelist):
        return True
    return any(namespace_matches(node.namespace, b) for b in gap.namespace_blacklist)


def hybrid(m: Manifest, nodes: Sequence[GraphNode], generation: int,
           gap: GapFill = GapFill(), pol: Policies | None = None) -> tuple[EntitySet, Report]:
    """Manifest entities linked to runtime nodes, orphans handled by the manifest's policy."""
    out = _declared(m, generation)
    policy = m.config.unmanifested_nodes
    report = Report(layers=["manifest", "runtime"], linked=True, policy=policy)
    by_fqn = sorted(nodes, key=lambda n: n.fqn)
    # runtime layer: one app per node, ids as runtime_only names them; gap-fill filters it
    ids = runtime.app_ids([runtime.NodeRef(n.name, n.namespace) for n in nodes])
    filtered = {n.fqn for n in by_fqn if _gap_filtered(n, gap)}
    report.filtered_by_gap_fill = len(filtered)
    listed = [n for n in by_fqn if n.fqn not in filtered and gap.allow_heuristic_apps]
    if pol is None:
        pol = policies({}, m.config.allow_manifest_override)[0]
    for n in listed:  # merge by id: a runtime app into the manifest app of the same id
        app = out.apps.get(ids[n.fqn])
        if app is not None:
            merge_app(app, Entity("apps", app.id, n.name, source="heuristic"), pol,
                      report.conflicts)
            report.enriched_count += 1
    bound: dict[str, str] = {}  # fqn -> app id
    for app in out.apps.values():
        if app.external or not app.binding:
            continue
        candidates = [n for n in by_fqn if matches(app.binding, n)]
        free = [n for n in candidates if n.fqn not in bound]
        if not free:
            if candidates:
                report.binding_conflicts += 1
                taken = candidates[0].fqn
                report.warnings.append(f"App '{app.id}' cannot bind to '{taken}' - already "
                                       f"bound to app '{bound[taken]}'")
            continue
        node = free[0]
        bound[node.fqn] = app.id
        app.is_online = True
        app.bound_fqn = node.fqn
        app.namespace = node.namespace
        if m.config.inherit_runtime_resources:
            app.node_fqn = node.fqn  # the node's topics, services, actions, parameters
    report.linked_count = len(bound)
    report.orphans = [n.fqn for n in by_fqn if n.fqn not in bound]
    runtime_apps: list[Entity] = []
    for n in listed:
        if n.fqn in bound or policy == "ignore":
            continue
        aid = ids[n.fqn]
        if aid in out.apps:  # a manifest app's id: the runtime app is suppressed
            continue
        runtime_apps.append(Entity("apps", aid, n.name, source="heuristic", node_fqn=n.fqn,
                                   namespace=n.namespace, bound_fqn=n.fqn))
    for app in sorted(runtime_apps, key=lambda a: a.id):
        out.apps[app.id] = app
    if gap.allow_heuristic_functions:
        for app in runtime_apps:
            fid = runtime.function_id(app.namespace or "/")
            func = out.functions.get(fid)
            if func is None:
                func = out.functions[fid] = Entity("functions", fid, fid, source="heuristic")
            elif func.source in PROTECTED_SOURCES:
                report.enriched_count += 1
            func.hosts.append(app.id)
    if policy in ("warn",):
        report.warnings.extend(f"Unmanifested node '{fqn}'" for fqn in report.orphans)
    _finish(out)
    kinds: dict[str, set[str]] = {}
    for kind in ("areas", "components", "apps", "functions"):
        for eid in out.of(kind):
            kinds.setdefault(eid, set()).add(kind)
    report.id_collisions = sorted(k for k, v in kinds.items() if len(v) > 1)
    report.total_entities = out.total()
    return out, report
