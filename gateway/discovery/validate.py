"""Manifest validation rules R001-R013 over a parsed manifest (pure)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..model.entities import Entity

if TYPE_CHECKING:
    from .manifest import Manifest

# Duplicate-id rule per kind: one id space across all five kinds.
DUPLICATE_RULE = {"areas": "R002", "components": "R003", "apps": "R004", "functions": "R005",
                  "scripts": "R012"}


@dataclass(frozen=True)
class Issue:
    """One validation finding: rule id, level, message, and where (file, line, entity)."""

    rule: str
    level: str  # "error" or "warning"
    message: str
    file: str = ""
    line: int = 0
    entity: str = ""

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line else "") if self.file else ""
        return f"[{self.rule}] {self.message}" + (f" (at {where})" if where else "")

    def as_dict(self) -> dict[str, Any]:
        """JSON form for /manifest/status."""
        out: dict[str, Any] = {"rule": self.rule, "level": self.level, "message": self.message}
        if self.file:
            out["file"] = self.file
        if self.line:
            out["line"] = self.line
        if self.entity:
            out["entity_id"] = self.entity
        return out


def _at(e: Entity, rule: str, message: str, level: str = "error") -> Issue:
    return Issue(rule, level, message, e.attrs.get("file", ""), e.attrs.get("line", 0), e.id)


def binding_key(app: Entity) -> str | None:
    """`node_name@namespace`, or `topic:<topic_namespace>`; None without a usable binding."""
    b = app.binding
    if not b:
        return None
    if b.get("node_name"):
        return f"{b['node_name']}@{b.get('namespace') or '*'}"
    if b.get("topic_namespace"):
        return f"topic:{b['topic_namespace']}"
    return None


def find_cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """One cycle (as a path of ids) in a directed graph, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in graph:
                continue
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in graph:
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def _cycle(rule_word: str, entities: Iterable[Entity], edges: str) -> Issue | None:
    ents = list(entities)
    graph: dict[str, list[str]] = {}
    for e in ents:
        value = getattr(e, edges)
        graph[e.id] = list(value) if isinstance(value, list) else ([value] if value else [])
    cycle = find_cycle(graph)
    if cycle is None:
        return None
    first = next(e for e in ents if e.id == cycle[0])
    return _at(first, "R011", f"{rule_word} cycle: " + " -> ".join(f"'{c}'" for c in cycle))


def validate(m: Manifest) -> list[Issue]:  # noqa: C901 - the rules in order, one block each
    """Every rule finding of a parsed manifest (errors and warnings)."""
    out: list[Issue] = []
    if m.version != "1.0":
        out.append(Issue("R001", "error", f"manifest_version must be \"1.0\", got "
                         f"{m.version!r}", m.path, 0))
    seen: dict[str, str] = {}
    by_kind: dict[str, list[Entity]] = {"areas": m.areas, "components": m.components,
                                        "apps": m.apps, "functions": m.functions}
    for kind, ents in by_kind.items():
        for e in ents:
            if e.id in seen:
                out.append(_at(e, DUPLICATE_RULE[kind], f"duplicate id '{e.id}' ({e.type}; "
                               f"already used by a {seen[e.id]})"))
            else:
                seen[e.id] = e.type
    scripts = list(m.scripts) + [s for e in m.components + m.apps for s in e.scripts]
    for s in scripts:
        if s["id"] in seen:
            out.append(Issue("R012", "error", f"duplicate id '{s['id']}' (script; already used "
                             f"by a {seen[s['id']]})", s.get("file", ""), s.get("line", 0),
                             s["id"]))
        else:
            seen[s["id"]] = "script"
    areas = {a.id for a in m.areas}
    comps = {c.id for c in m.components}
    apps = {a.id for a in m.apps}
    funcs = {f.id for f in m.functions}
    for a in m.areas:
        if a.parent and a.parent not in areas:
            out.append(_at(a, "R006", f"area '{a.id}': parent_area '{a.parent}' is not a "
                           "declared area"))
    for c in m.components:
        if c.area and c.area not in areas:
            out.append(_at(c, "R006", f"component '{c.id}': area '{c.area}' is not a declared "
                           "area"))
        if c.parent and c.parent not in comps:
            out.append(_at(c, "R006", f"component '{c.id}': parent_component_id '{c.parent}' "
                           "is not a declared component"))
    keys: dict[str, str] = {}
    for a in m.apps:
        if a.component and a.component not in comps:
            out.append(_at(a, "R007", f"app '{a.id}': is_located_on '{a.component}' is not a "
                           "declared component"))
        for dep in a.depends_on:
            if dep not in apps:
                out.append(_at(a, "R008", f"app '{a.id}': depends_on '{dep}' is not a declared "
                               "app", "warning"))
        if a.external and a.binding:
            out.append(_at(a, "R013", f"app '{a.id}': external apps are not linked; its "
                           "ros_binding is ignored", "warning"))
        key = binding_key(a)
        if key and "*" not in key:
            if key in keys:
                out.append(_at(a, "R010", f"app '{a.id}': ros_binding {key} is already used by "
                               f"app '{keys[key]}'"))
            else:
                keys[key] = a.id
    for f in m.functions:
        for dep in f.depends_on:
            if dep not in funcs:
                out.append(_at(f, "R008", f"function '{f.id}': depends_on '{dep}' is not a "
                               "declared function", "warning"))
        for host in f.hosts:
            if host not in seen:
                out.append(_at(f, "R009", f"function '{f.id}': host '{host}' is not a declared "
                               "entity", "warning"))
    for word, ents, edges in (("app dependency", m.apps, "depends_on"),
                              ("function dependency", m.functions, "depends_on"),
                              ("area parent", m.areas, "parent"),
                              ("component parent", m.components, "parent")):
        issue = _cycle(word, ents, edges)
        if issue is not None:
            out.append(issue)
    return out
