"""Merging a collection over this gateway and its peers (gateway/federation/combine.py)."""

from __future__ import annotations

from gateway.federation.combine import PeerAnswer, combine

XV = "x-vendor"
TEMP = "/powertrain/engine/temperature"
RENAMES = {("robot2", "temp_sensor"): "robot2__temp_sensor"}


def rename(gateway: str, app_id: str) -> str:
    return RENAMES.get((gateway, app_id), app_id)


def data(topic: str, *members: str) -> dict:
    return {"id": topic, "name": topic.rsplit("/", 1)[-1], "category": "currentData",
            XV: {"ros2": {"direction": "publish", "topic": topic, "type": "T"},
                 "member_ids": list(members)}}


def op(path: str, member: str, kind: str = "service") -> dict:
    return {"id": path.rsplit("/", 1)[-1], "name": path.rsplit("/", 1)[-1], "type": kind,
            XV: {"ros2_kind": kind, f"ros2_{kind}": path, "ros2_type": "T",
                 "member_ids": [member]}}


def test_data_from_two_gateways_is_qualified_and_reattributed() -> None:
    local = [data(TEMP, "temp_sensor", "temp_monitor"), data("/scan", "lidar")]
    answers = [PeerAnswer("robot2", items=[data(TEMP, "temp_sensor"), data("/rpm", "rpm")])]
    out = combine("data", XV, local, answers, rename)
    assert [i["id"] for i in out.items] == [f"temp_sensor:{TEMP}", "/scan",
                                            f"robot2__temp_sensor:{TEMP}", "/rpm"]
    assert out.items[2][XV]["member_ids"] == ["robot2__temp_sensor"]
    assert out.extra == {"contributors": ["local", "robot2"]}


def test_failures_make_the_answer_partial() -> None:
    answers = [PeerAnswer("robot1", reason="timeout"), PeerAnswer("robot2", items=[]),
               PeerAnswer("robot3", reason="unreachable")]
    out = combine("data", XV, [data("/a", "x")], answers, rename)
    assert out.extra["partial"] is True
    assert out.extra["failed_peers"] == ["robot1", "robot3"]
    assert out.extra["peer_failures"] == [{"peer": "robot1", "reason": "timeout"},
                                          {"peer": "robot3", "reason": "unreachable"}]
    assert out.extra["contributors"] == ["local", "robot2"]


def test_dropped_peer_items_are_listed() -> None:
    answers = [PeerAnswer("robot2", items=[{"id": 3}, data("/b", "y")])]
    out = combine("data", XV, [], answers, rename)
    assert [i["id"] for i in out.items] == ["/b"]
    assert out.extra["peer_dropped_items"] == [
        {"peer": "robot2", "error": "'id' must be a string", "source_id": "3"}]
    assert "partial" not in out.extra


def test_operations_ids_are_assigned_over_the_whole_fleet() -> None:
    local = [op("/e/calibrate", "calibration"), op("/e/long", "long", "action")]
    answers = [PeerAnswer("robot2", items=[op("/l/calibrate", "lidar")])]
    out = combine("operations", XV, local, answers, rename)
    assert [i["id"] for i in out.items] == ["calibration:calibrate", "long",
                                            "lidar:calibrate"]


def test_configurations_keep_app_qualified_ids_with_the_app_renamed() -> None:
    item = {"id": "temp_sensor:min_temp", "name": "min_temp", "value": 1.0,
            XV: {"member_ids": ["temp_sensor"]}}
    body = {"items": [item], XV: {"partial": True, "unavailable_nodes": ["/slow"]}}
    answers = [PeerAnswer("robot2", items=[item], body=body)]
    out = combine("configurations", XV, [], answers, rename)
    assert out.items[0]["id"] == "robot2__temp_sensor:min_temp"
    assert out.items[0][XV]["member_ids"] == ["robot2__temp_sensor"]
    # a peer's own partial answer (a node that did not answer there) stays visible
    assert out.extra["partial"] is True and out.extra["unavailable_nodes"] == ["robot2:/slow"]


def test_logs_are_ordered_by_time_and_limited() -> None:
    def entry(i: str, t: str) -> dict:
        return {"id": i, "timestamp": t, "severity": "info", "message": i,
                "context": {"node": "/n"}}
    local = [entry("1", "2024-01-01T00:00:01.000000000Z"),
             entry("2", "2024-01-01T00:00:03.000000000Z")]
    answers = [PeerAnswer("r2", items=[entry("1", "2024-01-01T00:00:02.000000000Z")])]
    out = combine("logs", XV, local, answers, rename, limit=2)
    assert [i["id"] for i in out.items] == ["r2:1", "2"]
    assert out.items[0][XV] == {"peer": "r2"}


def test_omitted_peer_contributes_nothing() -> None:
    out = combine("faults", XV, None, [PeerAnswer("r", body={"omitted": True})], rename)
    assert out.items == [] and out.extra == {"contributors": []}
