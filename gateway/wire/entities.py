"""Entity shapes: list item additions and detail links."""

from __future__ import annotations

from typing import Any

from ..http.routes import API_PREFIX
from ._base import WireBase


def aggregation(entity: Any, es: Any) -> dict[str, Any]:
    """How a component, function or area aggregates its member apps (empty for an app)."""
    if entity.kind == "apps":
        return {}
    apps = [a.id for a in es.member_apps(entity)]
    out: dict[str, Any] = {"aggregation_level": entity.type, "aggregated": True,
                           "aggregation_sources": apps}
    if entity.kind == "functions":
        out["host_count"] = len(entity.hosts)
    else:
        out["app_count"] = len(apps)
    if entity.kind == "areas":
        out["component_count"] = sum(1 for c in es.components.values() if c.area == entity.id)
    return out


class SpecEntities(WireBase):
    """Apps carry `ros2.node`; details carry top-level collection URIs beside `capabilities`."""

    def ref_vendor(self, entity: Any, xv: dict[str, Any]) -> dict[str, Any]:
        """Add the reference's per-type keys to an entity's vendor block (all additive).

        Apps: `ros2{node, namespace}`. Components: `ros2{node, namespace}` when declared with
        a namespace, `type`, `variant`, `area`, `parentComponentId`, `dependsOn`. Areas:
        `ros2.namespace`, `parent_area_id`. Functions: `hosts`.
        """
        if entity.kind == "apps" and entity.node_fqn:
            xv["ros2"] = {"node": entity.node_fqn, "namespace": entity.namespace}
        elif entity.kind == "components":
            if entity.namespace:
                xv["ros2"] = {"node": entity.attrs.get("fqn"), "namespace": entity.namespace}
            for key in ("type", "variant"):
                if entity.attrs.get(key):
                    xv[key] = entity.attrs[key]
            if entity.area:
                xv["area"] = entity.area
            if entity.parent:
                xv["parentComponentId"] = entity.parent
            if entity.depends_on:
                xv["dependsOn"] = list(entity.depends_on)
        elif entity.kind == "areas":
            if entity.namespace:
                xv["ros2"] = {"namespace": entity.namespace}
            if entity.parent:
                xv["parent_area_id"] = entity.parent
        elif entity.kind == "functions":
            xv["hosts"] = list(entity.hosts)
        return xv

    def is_located_on(self, entity: Any) -> str:
        """The app detail's `_links.is-located-on`: the relationship route."""
        return f"{API_PREFIX}{entity.path}/is-located-on"

    def detail_extras(self, entity: Any, out: dict[str, Any]) -> None:
        """Top-level URI strings for each capability, and the collection link."""
        for cap in out.get("capabilities", ()):
            out.setdefault(cap["name"], cap["href"])
        if entity.kind == "apps" and entity.component:
            out["is-located-on"] = self.is_located_on(entity)
        out.setdefault("_links", {})["collection"] = f"{API_PREFIX}/{entity.kind}"


class MedkitEntities(SpecEntities):
    """`_links.is-located-on` points at the component itself."""

    profile = "medkit"

    def is_located_on(self, entity: Any) -> str:
        """The hosting component's detail URI."""
        return f"{API_PREFIX}/components/{entity.component}"


EntityWire = SpecEntities
ENTITIES: dict[str, type[SpecEntities]] = {"spec": SpecEntities, "medkit": MedkitEntities}
