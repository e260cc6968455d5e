"""Configuration shapes: parameter item and value, list vendor block, reset-all report."""

from __future__ import annotations

from typing import Any

from ..errors import ApiError, vendor_error
from ..wire._base import WireBase

# Our parameter type names -> the reference's (used in the coexisting `parameter` blocks).
REF_TYPES = {"integer": "int", "integer_array": "int_array"}


class SpecConfigurations(WireBase):
    # Spec: reset-all answers 207 only for members run by another gateway; a local node that
    # was not reset is an error. The reference answers 207 whenever any node's reset failed.
    local_failures_multistatus = False
    """Items carry `value` (spec) and `data` + `x-vendor.parameter` (reference) together."""

    def parameter(self, p: Any, with_details: bool = True) -> dict[str, Any]:
        """The reference's `parameter` block: name, value, type (description, read_only)."""
        out: dict[str, Any] = {"name": p.name, "value": p.value,
                               "type": REF_TYPES.get(p.type_name, p.type_name)}
        if with_details:
            if p.description:
                out["description"] = p.description
            out["read_only"] = p.read_only
        return out

    def item(self, p: Any, app: Any, entity_id: str, qualified: bool,
             default: Any = None) -> dict[str, Any]:
        """One configuration (list item, GET and PUT answer)."""
        item: dict[str, Any] = {"id": f"{app.id}:{p.name}" if qualified else p.name,
                                "name": p.name, "type": "parameter", "value": p.value,
                                "data": p.value}
        if p.description:
            item["description"] = p.description
        xv: dict[str, Any] = {"ros2": {"node": p.node, "parameter": p.name, "type": p.type_name},
                              "read_only": p.read_only, "entity_id": entity_id,
                              "source": "runtime", "parameter": self.parameter(p)}
        if default is not None:
            xv["default_value"] = default
        if p.range is not None:
            xv["range"] = p.range
        if qualified:
            xv["member_ids"] = [app.id]
            xv["source_app"] = app.id
        item[self.xv] = xv
        return item

    def list_vendor(self, items: list[dict[str, Any]], entity: Any,
                    **extra: Any) -> dict[str, Any]:
        """List vendor block: total_count, entity_id and the raw `parameters` array."""
        params = []
        for it in items:
            xv = it.get(self.xv, {})
            block = dict(xv.get("parameter") or {"name": it.get("name"), "value": it.get("value")})
            block.pop("description", None)
            block.pop("read_only", None)
            block[self.xv] = {"source": (xv.get("member_ids") or [entity.id])[0],
                              "node": (xv.get("ros2") or {}).get("node")}
            params.append(block)
        out: dict[str, Any] = {"total_count": len(items), "entity_id": entity.id,
                               "source": "runtime", "parameters": params,
                               "is_aggregated": entity.kind != "apps",
                               "aggregation_level": entity.type}
        out.update(extra)
        return out

    def reset_report(self, entity_id: str, results: list[dict[str, Any]],
                     vendor: dict[str, Any]) -> dict[str, Any]:
        """The 207 body of a partial reset: spec `items` and the reference's `results`."""
        ref = []
        for r in results:
            entry: dict[str, Any] = {"node": r.get("node"), "app_id": r.get("id"),
                                     "success": r.get("status") == 204}
            if r.get("status") != 204:
                entry["error"] = r.get("message", "")
            ref.append(entry)
        return {"items": results, "entity_id": entity_id, "results": ref,
                self.xv: {"entity_id": entity_id, "partial": True, **vendor}}


    def refused(self, exc: Exception, **parameters: Any) -> ApiError | None:
        """A profile's own answer to a failed parameter write; None: the generic mapping."""
        return None


class MedkitConfigurations(SpecConfigurations):
    """The reference's 403 for a read-only parameter and 207 for any failed node reset."""

    profile = "medkit"
    local_failures_multistatus = True

    def refused(self, exc: Exception, **parameters: Any) -> ApiError | None:
        """403 parameter-read-only when the node refused a read-only parameter."""
        if "read-only" not in str(exc):  # rclpy: "Trying to set a read-only parameter: ..."
            return None
        return vendor_error(403, "x-vendor-ros2-parameter-read-only", "Parameter is read-only",
                            details=str(exc), **parameters)


ConfigurationWire = SpecConfigurations
CONFIGURATIONS: dict[str, type[SpecConfigurations]] = {"spec": SpecConfigurations,
                                                       "medkit": MedkitConfigurations}
