"""Push delivery on the demo robot behind the shipped manifest (hybrid), end to end: a
component's data trigger sees the real samples of its subcomponent's app. The aggregates'
triggers and subscriptions, orphans and held one-shot events are tested in process
(tests/push/test_inproc_push_areas.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import free_port
from tests.harness import Gateway
from tests.integration.test_push_support import Stream

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
ROBOT_NODES = ("temp_sensor",)
TOPIC = "data/powertrain/engine/temperature"


@pytest.fixture(scope="module")
def gw(robot: Any, domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("pushareas")
    settings = ["discovery.mode=hybrid",
                f"discovery.manifest_path={ROOT / 'deploy' / 'demo_manifest.yaml'}",
                f"state_dir={tmp / 'state'}", "discovery.refresh_debounce_ms=100"]
    with Gateway(free_port(), domain, settings, tmp / "gateway.log") as g:
        g.wait_for("/apps", lambda b: {"temp_sensor"} <= {
            a["id"] for a in b["items"] if a["x-vendor"]["is_online"]}, timeout=40)
        resp = g.request("PUT", "/apps/temp_sensor/configurations/publish_rate", {"value": 10.0})
        assert resp.status == 200, resp
        yield g


def trigger(gw: Gateway, kind: str, eid: str, collection: str, condition: str = "OnChange",
            params: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    resp = gw.request("POST", f"/{kind}/{eid}/triggers", {
        "resource": f"/api/v1/{kind}/{eid}/{collection}",
        "trigger_condition": {"condition_type": condition, **(params or {})}, **extra})
    assert resp.status == 201, resp
    return resp.json()  # type: ignore[no-any-return]


def events(gw: Gateway, body: dict[str, Any], count: int, timeout: float = 30.0
           ) -> list[dict[str, Any]]:
    stream = Stream(gw.port, body["event_source"])
    try:
        assert stream.status == 200, stream.body
        return stream.collect(count, timeout)
    finally:
        stream.close()


def test_data_trigger_on_a_component_sees_its_subcomponents_topic(gw: Gateway) -> None:
    kind, eid = "components", "engine-ecu"
    # engine-ecu hosts no temperature publisher itself, its subcomponent's app does
    body = trigger(gw, kind, eid, TOPIC, path="/temperature", multishot=True)
    frames = events(gw, body, 2)
    values = [f["data"]["payload"]["temperature"] for f in frames]
    assert all(isinstance(v, float) for v in values) and values[0] != values[1]
    assert gw.get(f"/{kind}/{eid}/triggers/{body['id']}").json()["x-vendor"]["topic"] == \
        "/powertrain/engine/temperature"
    assert gw.request("DELETE", f"/{kind}/{eid}/triggers/{body['id']}").status == 204
