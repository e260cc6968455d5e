"""The demo robot as fake nodes (gateway/demo/nodes.py's names, namespaces, topics, services,
action and parameters), so the shipped deploy/demo_manifest.yaml links them in process as it
links the real demo robot: `run_demo(gateway, scenario)` runs a scenario on them behind the
shipped manifest and inventory, their calibrate services answering."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.inproc.inproc_gateway import Gw, Runner, Scenario
from tests.inproc.inproc_robot import (
    ACTIVE,
    BOOL,
    DOUBLE,
    FIBONACCI,
    FLOAT32,
    STRING,
    TRIGGER,
    FakeNode,
    FakeParam,
)

ROOT = Path(__file__).resolve().parents[2]
DEMO_MANIFEST = (ROOT / "deploy" / "demo_manifest.yaml").read_text()
DEMO_INVENTORY = (ROOT / "deploy" / "demo_inventory.csv").read_text()
TEMPERATURE = "sensor_msgs/msg/Temperature"
LASER_SCAN = "sensor_msgs/msg/LaserScan"
BOOL_MSG = "std_msgs/msg/Bool"
ENGINE, BRAKES = "/powertrain/engine", "/chassis/brakes"
TEMPERATURE_TOPIC = f"{ENGINE}/temperature"
ENGINE_CALIBRATE, LIDAR_CALIBRATE = f"{ENGINE}/calibrate", "/perception/lidar/calibrate"


def _positive(value: Any) -> str:
    return "" if float(value) > 0.0 else "publish_rate must be > 0"


def _doubles(**values: float) -> dict[str, FakeParam]:
    return {name: FakeParam(DOUBLE, value) for name, value in values.items()}


def demo_nodes() -> list[FakeNode]:
    """The demo robot's twelve manifest-bound nodes (unresponsive_param never answers)."""
    temp = _doubles(publish_rate=2.0, min_temp=85.0, max_temp=95.0, temp_step=0.5)
    temp["publish_rate"].refuse = _positive
    sim = {"use_sim_time": FakeParam(BOOL, False)}
    return [
        FakeNode("temp_sensor", ENGINE, publishers=[(TEMPERATURE_TOPIC, TEMPERATURE)],
                 params=temp),
        FakeNode("temp_monitor", ENGINE, subscribers=[(TEMPERATURE_TOPIC, TEMPERATURE),
                                                      (f"{ENGINE}/rpm", FLOAT32)],
                 params=_doubles(overheat_threshold=110.0)),
        FakeNode("rpm_sensor", ENGINE, publishers=[(f"{ENGINE}/rpm", FLOAT32)], params=sim),
        FakeNode("calibration", ENGINE, services=[(ENGINE_CALIBRATE, TRIGGER)],
                 params=_doubles(calibration_offset=0.0)),
        FakeNode("long_calibration", ENGINE,
                 actions=[(f"{ENGINE}/long_calibration", FIBONACCI)], params=dict(sim)),
        FakeNode("pressure_sensor", BRAKES, publishers=[(f"{BRAKES}/pressure", FLOAT32)],
                 params=dict(sim)),
        FakeNode("actuator", BRAKES, publishers=[(f"{BRAKES}/pressure", FLOAT32)],
                 subscribers=[(f"{BRAKES}/command", FLOAT32)], params=dict(sim)),
        FakeNode("status_sensor", "/body/door/front_left",
                 publishers=[("/body/door/front_left/is_open", BOOL_MSG),
                             ("/body/door/front_left/state", STRING)], params=dict(sim)),
        FakeNode("controller", "/body/lights", publishers=[("/body/lights/status", BOOL_MSG)],
                 subscribers=[("/body/lights/command", BOOL_MSG)], params=dict(sim)),
        FakeNode("lidar_sensor", "/perception/lidar",
                 publishers=[("/perception/lidar/scan", LASER_SCAN)],
                 services=[(LIDAR_CALIBRATE, TRIGGER)],
                 params=_doubles(min_range=10.0, max_range=5.0, scan_frequency=25.0,
                                 angular_resolution=0.5)),
        FakeNode("managed_lifecycle", "/", params=dict(sim), lifecycle=ACTIVE),
        FakeNode("unresponsive_param", "/", params={}, online=False),
    ]


def serve_demo(gw: Gw) -> None:
    """The demo's calibrate services answer (the fake caller's handlers)."""
    from std_srvs.srv import Trigger

    def calibrate(request: Any) -> Any:
        return Trigger.Response(success=True, message="calibrated")

    gw.caller.handlers[ENGINE_CALIBRATE] = calibrate
    gw.caller.handlers[LIDAR_CALIBRATE] = calibrate


def run_demo(gateway: Runner, scenario: Scenario, settings: tuple[str, ...] = (),
             mode: str = "hybrid", nodes: list[FakeNode] | None = None,
             manifest: str = DEMO_MANIFEST) -> None:
    """Run `scenario` on the fake demo robot (or `nodes`) behind the shipped manifest (or
    `manifest`) and inventory, with the `gateway` fixture."""
    async def run(gw: Gw) -> None:
        serve_demo(gw)
        await scenario(gw)

    gateway(run, settings, nodes=demo_nodes() if nodes is None else nodes, manifest=manifest,
            mode=mode, inventory=DEMO_INVENTORY)
