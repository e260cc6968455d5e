"""Create and update rules of subscriptions and triggers, URIs and records (explicit now)."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.errors import ApiError
from gateway.model.resource_uris import UriError, parse_resource, topic_matches
from gateway.push.model import Trigger
from gateway.push.rules import (
    subscription_create,
    subscription_update,
    trigger_create,
    trigger_update,
)
from gateway.push.store import TriggerStore

TOPIC = "/api/v1/apps/temp_sensor/data/powertrain/engine/temperature"


def sub(body: Any, collections: dict[str, bool] | None = None) -> Any:
    return subscription_create(body, "apps", "temp_sensor", 3600, collections or {})


def err(fn: Any, *args: Any) -> tuple[int, str, str | None]:
    with pytest.raises(ApiError) as info:
        fn(*args)
    e = info.value
    return e.status, e.body("vendor")["error_code"], e.body("vendor").get("vendor_code")


def test_parse_resource_and_topic_match() -> None:
    ref = parse_resource(TOPIC)
    assert (ref.entity_type, ref.entity_id, ref.collection, ref.path) == (
        "apps", "temp_sensor", "data", "/powertrain/engine/temperature")
    assert parse_resource("/api/v1/apps/a/data/%2Fx%2Fy").path == "/x/y"
    assert topic_matches("/powertrain/engine/temperature", "/engine/temperature")
    assert topic_matches("/powertrain/engine/temperature", "/powertrain/engine/temperature")
    assert not topic_matches("/powertrain/engine/temperature", "")
    for bad in ("", "/apps/x/data", "/api/v1/robots/x/data", "/api/v1/apps/x",
                "/api/v1/apps/x/data/../faults", "/api/v1/apps/x:y/faults",
                "/api/v1/apps/x/faults?y=1", "/api/v1/apps/x/data/a//b"):
        with pytest.raises(UriError):
            parse_resource(bad)


def test_subscription_create_accepts_topic_and_whole_collections() -> None:
    spec = sub({"resource": TOPIC, "interval": "fast", "duration": 10})
    assert spec.interval == "fast" and spec.duration == 10 and spec.ref.path
    assert sub({"resource": "/api/v1/apps/temp_sensor/faults", "interval": "slow"}).duration \
        == 3600
    assert sub({"resource": "/api/v1/apps/temp_sensor/x-plc", "interval": "slow"},
               {"x-plc": True}).ref.collection == "x-plc"


@pytest.mark.parametrize(("body", "expected"), [
    ({"interval": "fast"}, (400, "invalid-parameter", None)),
    ({"resource": TOPIC}, (400, "invalid-parameter", None)),
    ({"resource": TOPIC, "interval": "rapid"}, (400, "invalid-parameter", None)),
    ({"resource": TOPIC, "interval": "fast", "duration": 0}, (400, "invalid-parameter", None)),
    ({"resource": TOPIC, "interval": "fast", "duration": 3601},
     (400, "invalid-parameter", None)),
    ({"resource": TOPIC, "interval": "fast", "duration": True},
     (400, "invalid-parameter", None)),
    ({"resource": "apps/x", "interval": "fast"},
     (400, "vendor-error", "x-vendor-invalid-resource-uri")),
    ({"resource": "/api/v1/apps/temp_sensor/data/../x", "interval": "fast"},
     (400, "vendor-error", "x-vendor-invalid-resource-uri")),
    ({"resource": "/api/v1/apps/temp_sensor/data", "interval": "fast"},
     (400, "vendor-error", "x-vendor-invalid-resource-uri")),
    ({"resource": "/api/v1/apps/temp_sensor/faults/F1", "interval": "fast"},
     (400, "vendor-error", "x-vendor-invalid-resource-uri")),
    ({"resource": "/api/v1/apps/other/faults", "interval": "fast"},
     (400, "vendor-error", "x-vendor-entity-mismatch")),
    ({"resource": "/api/v1/apps/temp_sensor/operations", "interval": "fast"},
     (400, "vendor-error", "x-vendor-collection-not-supported")),
    ({"resource": "/api/v1/apps/temp_sensor/x-plc", "interval": "fast"},
     (400, "vendor-error", "x-vendor-collection-not-available")),
    ({"resource": TOPIC, "interval": "fast", "protocol": "websocket"},
     (400, "vendor-error", "x-vendor-unsupported-protocol")),
    ([1], (400, "invalid-request", None)),
])
def test_subscription_create_errors(body: Any, expected: tuple[int, str, str | None]) -> None:
    assert err(sub, body) == expected


def test_subscription_update() -> None:
    assert subscription_update({"duration": 5}, 60) == (None, 5)
    assert subscription_update({"interval": "fast"}, 60) == ("fast", None)
    for body in ({}, {"duration": 61}, {"interval": "x"}, "x"):
        with pytest.raises(ApiError):
            subscription_update(body, 60)


def trig(body: dict[str, Any], etype: str = "apps", eid: str = "temp_sensor") -> Any:
    return trigger_create(body, etype, eid)


def test_trigger_create_fields_and_body() -> None:
    body = {"resource": TOPIC, "path": "/temperature", "multishot": True, "lifetime": 30,
            "trigger_condition": {"condition_type": "LeaveRange", "lower_bound": 20,
                                  "upper_bound": 80},
            "log_settings": {"severity": "warning"}}
    spec = trig(body)
    t = Trigger("trig_1", "apps", "temp_sensor", spec, body, 100.0, 130.0)
    out = t.body()
    assert out["status"] == "active" and out["lifetime"] == 30 and out["path"] == "/temperature"
    assert out["log_settings"] == {"severity": "warning", "marker": "Trigger fired"}
    assert out["event_source"] == "/api/v1/apps/temp_sensor/triggers/trig_1/events"
    assert not t.expired(129.9) and t.expired(130.0)
    minimal = trig({"resource": "/api/v1/apps/temp_sensor/faults",
                    "trigger_condition": {"condition_type": "OnChange"}})
    assert not minimal.multishot and not minimal.persistent and minimal.lifetime is None


@pytest.mark.parametrize(("body", "expected"), [
    ({"resource": TOPIC}, (400, "invalid-parameter", None)),
    ({"resource": TOPIC, "trigger_condition": {"condition_type": 1}},
     (400, "invalid-parameter", None)),
    ({"trigger_condition": {"condition_type": "OnChange"}}, (400, "invalid-parameter", None)),
    ({"resource": "/api/v1/apps/temp_sensor/data/../x",
      "trigger_condition": {"condition_type": "OnChange"}},
     (400, "vendor-error", "x-vendor-invalid-resource-uri")),
    ({"resource": "/api/v1/apps/x/faults", "trigger_condition": {"condition_type": "OnChange"}},
     (400, "vendor-error", "x-vendor-entity-mismatch")),
    ({"resource": "/api/v1/apps/temp_sensor/bulk-data",
      "trigger_condition": {"condition_type": "OnChange"}}, (400, "invalid-parameter", None)),
    ({"resource": TOPIC, "path": "x", "trigger_condition": {"condition_type": "OnChange"}},
     (400, "invalid-parameter", None)),
    ({"resource": TOPIC, "protocol": "mqtt",
      "trigger_condition": {"condition_type": "OnChange"}},
     (400, "vendor-error", "x-vendor-unsupported-protocol")),
    ({"resource": TOPIC, "lifetime": 0, "trigger_condition": {"condition_type": "OnChange"}},
     (400, "invalid-parameter", None)),
    ({"resource": TOPIC, "trigger_condition": {"condition_type": "EnterRange"}},
     (400, "invalid-parameter", None)),
    ({"resource": TOPIC, "multishot": "yes",
      "trigger_condition": {"condition_type": "OnChange"}}, (400, "invalid-parameter", None)),
    ({"resource": TOPIC, "log_settings": {"severity": "loud"},
      "trigger_condition": {"condition_type": "OnChange"}}, (400, "invalid-parameter", None)),
])
def test_trigger_create_errors(body: Any, expected: tuple[int, str, str | None]) -> None:
    assert err(trig, body) == expected


def test_trigger_update_and_path_skips_missing_members() -> None:
    assert trigger_update({"lifetime": 5}) == 5
    for body in ({}, {"lifetime": -1}, {"lifetime": 1.5}):
        with pytest.raises(ApiError):
            trigger_update(body)
    spec = trig({"resource": TOPIC, "path": "/data",
                 "trigger_condition": {"condition_type": "OnChange"}})
    t = Trigger("trig_2", "apps", "temp_sensor", spec, {}, 0.0)
    assert t.evaluate({"data": 1}) and not t.evaluate({"other": 2})
    assert t.previous == 1 and not t.evaluate({"data": 1.0}) and t.evaluate({"data": 2})


def test_store_round_trip(tmp_path: Any) -> None:
    store = TriggerStore(tmp_path / "t.db")
    store.put("trig_3", "apps", "a", {"resource": "r"}, 1.0, None)
    store.put("trig_4", "apps", "a", {"resource": "r"}, 2.0, 50.0)
    store.set_previous([("trig_3", {"data": 5})])
    store.terminate("trig_4")
    store.close()
    again = TriggerStore(tmp_path / "t.db")
    rows = again.active()
    assert [r["id"] for r in rows] == ["trig_3"] and rows[0]["previous"] == {"data": 5}
    assert sorted(again.ids()) == ["trig_3", "trig_4"]
    again.delete("trig_3")
    assert again.active() == []
