"""The served OpenAPI document: operation ids and the vendor extension schemas per profile."""

from __future__ import annotations

import copy
import re
from typing import Any

from ._base import WireBase

_OBJ: dict[str, Any] = {"type": "object"}
_STR: dict[str, Any] = {"type": "string"}
_BOOL: dict[str, Any] = {"type": "boolean"}
_INT: dict[str, Any] = {"type": "integer"}
_STRS: dict[str, Any] = {"type": "array", "items": _STR}


def _obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


# The reference's `x-medkit` objects (inc/dto/x_medkit.hpp and the resource DTOs), by the
# names its document gives them; fields as medkit-wire.md lists them (all optional).
XMEDKIT_SCHEMAS: dict[str, Any] = {
    "XMedkitRos2": _obj(node=_STR, namespace=_STR, topic=_STR, type=_STR,
                        direction={"enum": ["publish", "subscribe", "both"]},
                        kind={"enum": ["service", "action"]}, service=_STR, action=_STR),
    "XMedkitCollection": _obj(entity_id=_STR, total_count=_INT, count=_INT, source_id=_STR,
                              aggregated=_BOOL, aggregation_sources=_STRS,
                              aggregation_level=_STR, partial=_BOOL, failed_peers=_STRS,
                              peer_dropped_items=_INT),
    "XMedkitEntity": _obj(source=_STR, is_online=_BOOL, component_id=_STR,
                          ros2=_ref("XMedkitRos2"), type=_STR, parentComponentId=_STR,
                          dependsOn=_STRS, area=_STR, variant=_STR, description=_STR,
                          contributors=_STRS, hosts=_STRS, parent_area_id=_STR,
                          identity=_OBJ, missing=_BOOL, external=_BOOL, available=_BOOL),
    "XMedkitDataItem": _obj(ros2=_ref("XMedkitRos2"), type_info=_OBJ, member_ids=_STRS,
                            entity_id=_STR, available=_BOOL),
    "XMedkitOperation": _obj(ros2=_ref("XMedkitRos2"), entity_id=_STR, source=_STR,
                             type_info=_OBJ, member_ids=_STRS, available=_BOOL),
    "XMedkitConfiguration": _obj(parameter=_OBJ, parameters={"type": "array", "items": _OBJ},
                                 source=_STR, node=_STR),
    "XMedkitFault": _obj(entity_type=_STR, entity_id=_STR, captured_at=_STR),
}

# Component schema -> the x-medkit schema its `x-medkit` property (added when absent) refers to.
_TARGETS = {"ListEnvelope": "XMedkitCollection", "EntitySummary": "XMedkitEntity",
            "EntityDetail": "XMedkitEntity", "DataItem": "XMedkitDataItem", "Operation": "XMedkitOperation",
            "Configuration": "XMedkitConfiguration", "Fault": "XMedkitFault"}
_WORD = re.compile(r"_+([a-z0-9])")


def camel_case(operation_id: str) -> str:
    """`get_app_status` -> `getAppStatus` (the reference's operation id form)."""
    return _WORD.sub(lambda m: m.group(1).upper(), operation_id).rstrip("_")  # `get_`: /


class SpecDocs(WireBase):
    """The document as built: snake_case operation ids, no profile-specific schemas."""

    def finish(self, doc: dict[str, Any]) -> dict[str, Any]:
        """The document this profile serves."""
        return doc


class MedkitDocs(SpecDocs):
    """The reference's document: camelCase operation ids and its `XMedkit*` schemas."""

    profile = "medkit"

    def finish(self, doc: dict[str, Any]) -> dict[str, Any]:
        """camelCase operation ids; `x-medkit` properties refer to the `XMedkit*` schemas."""
        doc = copy.deepcopy(doc)  # the built document shares the module's schema objects
        for ops in doc["paths"].values():
            for op in ops.values():
                if isinstance(op, dict) and "operationId" in op:
                    op["operationId"] = camel_case(op["operationId"])
        schemas = doc["components"]["schemas"]
        if self.xv != "x-medkit":  # api.vendor set: the names would not match the keys
            return doc
        schemas.update(copy.deepcopy(XMEDKIT_SCHEMAS))
        for name, schema in schemas.items():
            props = schema.get("properties") if isinstance(schema, dict) else None
            if not isinstance(props, dict) or name.startswith("XMedkit"):
                continue
            target = _TARGETS.get(name)
            if target is None and props.get(self.xv) == _OBJ \
                    and isinstance(props.get("items"), dict) \
                    and props["items"].get("type") == "array":
                target = "XMedkitCollection"  # a list envelope's x-medkit
            if target is not None and props.get(self.xv, _OBJ) == _OBJ:
                props[self.xv] = _ref(target)
        return doc


DocsWire = SpecDocs
DOCS: dict[str, type[SpecDocs]] = {"spec": SpecDocs, "medkit": MedkitDocs}
