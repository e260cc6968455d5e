"""Data shapes: list item, read answer, and what a read of a topic the entity lacks gets."""

from __future__ import annotations

from typing import Any

from ..errors import ApiError
from ..wire._base import WireBase
from ..wire.bodies import untyped_topic


class SpecData(WireBase):
    """`name` is the full topic path (the value the reference's clients address reads by)."""

    # A topic the entity does not have: False answers 404 (spec); True addresses it anyway, as
    # the reference does: reads answer 200 `metadata_only` when nothing is there, writes
    # publish with the graph's type or the envelope's.
    address_any_topic = False

    def item(self, ref: Any, type_info: dict[str, Any] | None) -> dict[str, Any]:
        """One data list item."""
        xv: dict[str, Any] = {
            "ros2": {"direction": ref.direction, "topic": ref.topic, "type": ref.type},
            "member_ids": ref.member_ids,
        }
        if type_info is not None:
            xv["type_info"] = type_info
        return {"id": ref.topic, "name": ref.topic, "category": "currentData", self.xv: xv}

    def read_vendor(self, entity_id: str, topic: str, type_name: str, info: Any,
                    type_info: Any) -> dict[str, Any]:  # JSON or an orjson.Fragment
        """Vendor block of a read answer (timestamp and status are added by the reader)."""
        xv: dict[str, Any] = {
            "entity_id": entity_id,
            "ros2": {"topic": topic, "type": type_name},
            "publisher_count": info.publisher_count if info else 0,
            "subscriber_count": info.subscriber_count if info else 0,
        }
        if type_info is not None:
            xv["type_info"] = type_info
        return xv

    def unlisted_write(self, missing: ApiError, data_id: str) -> ApiError:
        """A write to a topic the entity lacks, with no type to publish it by: its 404."""
        return missing


class MedkitData(SpecData):
    """Reads and writes address any topic path, as the reference's do."""

    profile = "medkit"
    address_any_topic = True

    def unlisted_write(self, missing: ApiError, data_id: str) -> ApiError:
        """400 "type: missing required field": neither the graph nor the body names a type
        (the reference reads the body before it looks for the topic)."""
        return untyped_topic(data_id if data_id.startswith("/") else "/" + data_id)


DataWire = SpecData
DATA: dict[str, type[SpecData]] = {"spec": SpecData, "medkit": MedkitData}
