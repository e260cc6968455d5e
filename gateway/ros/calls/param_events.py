"""`/parameter_events` of every node, handed to the loop as (node, changed parameter names)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rclpy.qos import qos_profile_parameter_events

from ..dds.bridge import RosBridge


class ParameterEvents:
    """One subscription to /parameter_events; `on_change(node, names)` runs on the loop."""

    def __init__(self, bridge: RosBridge, on_change: Callable[[str, list[str]], None]) -> None:
        self.bridge = bridge
        self.on_change = on_change
        self._sub: Any = None

    async def start(self) -> None:
        """Subscribe (off the loop)."""
        await self.bridge.run(self._subscribe, what="subscribing to /parameter_events")

    def _subscribe(self) -> None:
        from rcl_interfaces.msg import ParameterEvent  # noqa: PLC0415 - ROS types load on first use

        self._sub = self.bridge.node.create_subscription(
            ParameterEvent, "/parameter_events", self._on_event, qos_profile_parameter_events)

    def _on_event(self, msg: Any) -> None:  # executor thread
        names = [p.name for p in (*msg.new_parameters, *msg.changed_parameters,
                                  *msg.deleted_parameters)]
        if names and msg.node != self.bridge.node.get_fully_qualified_name():
            self.bridge.call_soon(self.on_change, msg.node, names)

    async def stop(self) -> None:
        """Drop the subscription."""
        sub, self._sub = self._sub, None
        await self.bridge.drop_subscription(sub, "/parameter_events")
