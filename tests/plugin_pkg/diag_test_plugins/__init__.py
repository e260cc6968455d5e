"""Plugins for the gateway's tests: a PLC entity with data, operations and a route; failures."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from gateway.plugins import InvalidInput, NotFound, Plugin, PluginError, PluginRoute


class PlcPlugin(Plugin):
    """One app `plc_1` with two registers (data), a reset operation and an x- route."""

    def __init__(self) -> None:
        self.registers: dict[str, Any] = {"pressure": 4.2, "mode": "auto"}
        self.lock = threading.Lock()
        self.label = "plc"

    def configure(self, config: dict[str, Any]) -> None:
        self.label = str(config.get("label", "plc"))

    def providers(self) -> dict[str, Any]:
        return {"introspection": self, "data": self, "operations": self}

    def introspect(self) -> dict[str, Any]:
        return {"apps": [{"id": "plc_1", "name": f"{self.label} 1",
                          "description": "A PLC reached through a test plugin"}],
                "functions": [{"id": "plc_line", "name": "PLC line", "hosts": ["plc_1"]}]}

    def list_data(self, entity_id: str) -> list[dict[str, Any]]:
        return [{"id": k, "name": k} for k in sorted(self.registers)]

    def read_data(self, entity_id: str, data_id: str) -> Any:
        with self.lock:
            if data_id not in self.registers:
                raise NotFound(f"register {data_id} does not exist")
            return {"value": self.registers[data_id]}

    def write_data(self, entity_id: str, data_id: str, value: Any) -> Any:
        if not isinstance(value, dict) or "value" not in value:
            raise InvalidInput("body must be {\"value\": ...}")
        with self.lock:
            self.registers[data_id] = value["value"]
        return {"value": value["value"]}

    async def list_operations(self, entity_id: str) -> list[dict[str, Any]]:
        return [{"id": "reset", "name": "Reset registers"}]

    async def execute(self, entity_id: str, op_id: str, parameters: dict[str, Any]) -> Any:
        with self.lock:
            self.registers = {"pressure": 0.0, "mode": str(parameters.get("mode", "auto"))}
        return {"reset": True, "mode": self.registers["mode"]}

    def routes(self) -> list[PluginRoute]:
        return [PluginRoute("GET", "/apps/{app_id}/x-vendor-plc-status", self.status,
                            "PLC link status")]

    def status(self, request: Any) -> dict[str, Any]:
        return {"app": request.match_info["app_id"], "link": "up", "label": self.label}


class RaisingPlugin(Plugin):
    """Routes that raise: a provider error with a status, and an unexpected exception."""

    def routes(self) -> list[PluginRoute]:
        return [PluginRoute("GET", "/x-vendor-raise/refused", self.refused),
                PluginRoute("GET", "/x-vendor-raise/crash", self.crash)]

    def refused(self, request: Any) -> Any:
        raise PluginError("device refused the request: " + "x" * 600, status=409)

    async def crash(self, request: Any) -> Any:
        raise RuntimeError("bug inside the plugin")


class HangingPlugin(Plugin):
    """Routes that never answer: a blocking sync one and an awaiting async one."""

    def routes(self) -> list[PluginRoute]:
        return [PluginRoute("GET", "/x-vendor-hang/sync", self.sync_hang),
                PluginRoute("GET", "/x-vendor-hang/async", self.async_hang)]

    def sync_hang(self, request: Any) -> Any:
        time.sleep(3600)

    async def async_hang(self, request: Any) -> Any:
        await asyncio.sleep(3600)


class OldApiPlugin(Plugin):
    """Declares a plugin API version the gateway does not serve."""

    api_version = 0


class BadConfigPlugin(Plugin):
    """Refuses its configuration."""

    def configure(self, config: dict[str, Any]) -> None:
        raise ValueError("setting plugins.test_bad_config.level is required")
