"""Plugins for the gateway's tests: a PLC entity with data, operations and a route; failures."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from gateway.plugins import (
    AccessDenied,
    InvalidInput,
    NotFound,
    Plugin,
    PluginError,
    PluginRoute,
    PreconditionFailed,
)


class PlcPlugin(Plugin):
    """One app `plc_1`: registers (data), a reset operation, device faults, logs, scripts,
    lifecycle, and x- routes (one of them a write)."""

    def __init__(self) -> None:
        self.registers: dict[str, Any] = {"pressure": 4.2, "mode": "auto"}
        self.lock = threading.Lock()
        self.label = "plc"
        self.device_faults: dict[str, dict[str, Any]] = {
            "PLC_OVERPRESSURE": {"fault_code": "PLC_OVERPRESSURE", "severity": "ERROR",
                                 "message": "pressure above 9 bar", "source": "plc_1"},
            "PLC_BATTERY_LOW": {"fault_code": "PLC_BATTERY_LOW", "severity": "WARN",
                                "message": "backup battery low", "source": "plc_1"}}
        self.running = True
        self.transitions: list[str] = []
        self.executions: dict[str, dict[str, Any]] = {}
        self.commands: list[Any] = []

    def configure(self, config: dict[str, Any]) -> None:
        self.label = str(config.get("label", "plc"))

    def providers(self) -> dict[str, Any]:
        return {"introspection": self, "data": self, "operations": self, "faults": self,
                "logs": self, "scripts": self, "lifecycle": self}

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

    # faults: the device's own fault table
    def list_faults(self, entity_id: str) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(f) for f in self.device_faults.values()]

    def get_fault(self, entity_id: str, code: str) -> dict[str, Any]:
        with self.lock:
            if code not in self.device_faults:
                raise NotFound(f"the PLC reports no fault {code}")
            return {"item": dict(self.device_faults[code]), "environment_data": {}}

    def clear_fault(self, entity_id: str, code: str) -> None:
        with self.lock:
            if self.device_faults.pop(code, None) is None:
                raise NotFound(f"the PLC reports no fault {code}")

    # logs: the device's event log
    async def list_logs(self, entity_id: str) -> list[dict[str, Any]]:
        return [{"timestamp": "2026-01-01T00:00:00.000Z", "severity": "debug",
                 "message": "poll"},
                {"timestamp": "2026-01-01T00:00:01.000Z", "severity": "info",
                 "message": "link up"},
                {"timestamp": "2026-01-01T00:00:02.000Z", "severity": "warning",
                 "message": "pressure high"}]

    # scripts: predefined routines the PLC runs
    def list_scripts(self, entity_id: str) -> list[dict[str, Any]]:
        return [{"id": "calibrate", "name": "Calibrate sensors",
                 "description": "zero the pressure sensor",
                 "parameters_schema": {"type": "object"}},
                {"id": "broken", "name": "Raises"}, {"id": "stuck", "name": "Never answers"}]

    def execute_script(self, entity_id: str, script_id: str, request: dict[str, Any]) -> Any:
        if script_id == "broken":
            raise RuntimeError("script engine crashed")
        if script_id == "stuck":
            time.sleep(3600)
        with self.lock:
            eid = f"exec_{len(self.executions) + 1}"
            self.executions[eid] = {"id": eid, "status": "running", "progress": 10,
                                    "started_at": "2026-01-01T00:00:00Z", "completed_at": None,
                                    "parameters": None,
                                    "x-vendor": {"request": dict(request)}}
            return dict(self.executions[eid])

    def list_executions(self, entity_id: str, script_id: str) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(e) for e in self.executions.values()]

    def get_execution(self, entity_id: str, script_id: str, execution_id: str) -> Any:
        with self.lock:
            found = self.executions.get(execution_id)
            return dict(found) if found is not None else None

    def control_execution(self, entity_id: str, script_id: str, execution_id: str,
                          action: str) -> Any:
        with self.lock:
            if execution_id not in self.executions:
                raise NotFound(f"no execution {execution_id}")
            self.executions[execution_id].update(status="terminated", progress=100)
            return dict(self.executions[execution_id])

    # lifecycle: the PLC program runs or is stopped
    def request_transition(self, entity_id: str, transition: str) -> None:
        if transition == "force-shutdown":
            raise AccessDenied("force-shutdown needs the key switch on the cabinet")
        with self.lock:
            if transition == "restart" and not self.running:
                raise PreconditionFailed("the PLC program is stopped; start it first")
            self.running = transition in ("start", "restart")
            self.transitions.append(transition)

    def status(self, entity_id: str) -> dict[str, Any]:
        return {"status": "ready" if self.running else "notReady", "start": not self.running,
                "restart": self.running, "shutdown": self.running, "force-shutdown": True}

    def routes(self) -> list[PluginRoute]:
        return [PluginRoute("GET", "/apps/{app_id}/x-vendor-plc-status", self.link,
                            "PLC link status"),
                PluginRoute("POST", "/apps/{plc_id}/x-vendor-plc-command", self.command,
                            "Send a command to the PLC")]

    def link(self, request: Any) -> dict[str, Any]:
        return {"app": request.match_info["app_id"], "link": "up", "label": self.label}

    async def command(self, request: Any) -> dict[str, Any]:
        body = await request.json()
        self.commands.append(body)
        return {"accepted": body, "count": len(self.commands)}


class SensorPlugin(Plugin):
    """One app `sensor_1` without fault or lifecycle providers: it raises its faults into the
    gateway's fault manager through a write route."""

    def __init__(self) -> None:
        self.ctx: Any = None

    def set_context(self, ctx: Any) -> None:
        self.ctx = ctx

    def providers(self) -> dict[str, Any]:
        return {"introspection": self}

    def introspect(self) -> dict[str, Any]:
        return {"apps": [{"id": "sensor_1", "name": "Field sensor"}]}

    def routes(self) -> list[PluginRoute]:
        return [PluginRoute("POST", "/apps/{app_id}/x-vendor-sensor-fault", self.report,
                            "Raise or pass a sensor fault")]

    async def report(self, request: Any) -> dict[str, Any]:
        body = await request.json()
        app_id = request.match_info["app_id"]
        if body.get("passed"):
            ok = self.ctx.pass_fault(app_id, body["code"])
        else:
            ok = self.ctx.raise_fault(app_id, body["code"], int(body.get("severity", 2)),
                                      str(body.get("description", "")))
        return {"reported": ok, "source": self.ctx.fault_source(app_id)}


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
