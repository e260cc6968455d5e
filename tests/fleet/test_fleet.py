"""A primary merging three robots and a spoiled peer: listings, item ids, forwarding, failures.

Tests run in file order on one fleet; the last ones stop and kill robot3's gateway.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any

import pytest

from tests.fleet.conftest import Fleet, wait_until
from tests.harness import Response, assert_error, enc

pytestmark = pytest.mark.integration

TEMP = "/powertrain/engine/temperature"
SCAN = "/perception/lidar/scan"


def ids(body: dict[str, Any]) -> list[str]:
    return [i["id"] for i in body["items"]]


def by_id(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {i["id"]: i for i in body["items"]}


# -- entity merge -------------------------------------------------------------------------


def test_merged_entity_lists_and_app_collisions(fleet: Fleet) -> None:
    apps = by_id(fleet.get("/apps").json())
    # the primary's own temp_sensor keeps its id; robot1's colliding one is re-attributed
    assert apps["temp_sensor"]["x-vendor"]["contributors"] == ["local"]
    assert apps["robot1__temp_sensor"]["x-vendor"]["contributors"] == ["robot1"]
    assert apps["robot1__temp_sensor"]["name"] == "temp_sensor"
    assert apps["lidar_sensor"]["x-vendor"]["contributors"] == ["robot2"]
    assert apps["multi"]["x-vendor"]["contributors"] == ["robot3"]
    assert all("available" not in a["x-vendor"] for a in apps.values())
    # components and functions merge by id (every gateway here runs on one host)
    comps = fleet.get("/components").json()["items"]
    assert len(comps) == 1
    # local first, then peers by name
    assert comps[0]["x-vendor"]["contributors"] == ["local", "junk", "robot1", "robot2",
                                                    "robot3"]
    funcs = by_id(fleet.get("/functions").json())
    assert funcs["powertrain"]["x-vendor"]["contributors"] == ["local", "robot1", "robot3"]
    assert funcs["perception"]["x-vendor"]["contributors"] == ["robot2"]
    hosts = set(ids(fleet.get("/functions/powertrain/hosts").json()))
    assert hosts == {"temp_sensor", "robot1__temp_sensor", "calibration", "long_calibration",
                     "rpm_sensor"}


def test_entity_details_of_peer_apps(fleet: Fleet) -> None:
    detail = fleet.get("/apps/robot1__temp_sensor").json()
    assert detail["id"] == "robot1__temp_sensor" and detail["type"] == "app"
    assert detail["x-vendor"]["contributors"] == ["robot1"]
    assert detail["x-vendor"]["ros2"]["node"] == "/powertrain/engine/temp_sensor"
    assert detail["_links"]["self"] == "/api/v1/apps/robot1__temp_sensor"
    located = fleet.get("/apps/robot1__temp_sensor/is-located-on").json()
    assert ids(located) == [fleet.host]
    assert fleet.get("/components/" + fleet.host).json()["x-vendor"]["contributors"][0] == \
        "local"


def test_health_lists_peers(fleet: Fleet) -> None:
    health = fleet.get("/health").json()
    peers = {p["name"]: p for p in health["peers"]}
    assert set(peers) == {"robot1", "robot2", "robot3", "junk"}
    assert all(p["status"] == "online" and p["url"].startswith("http://127.0.0.1:")
               for p in peers.values())
    assert fleet.get("/").json()["capabilities"]["aggregation"] is True
    assert "peers" not in fleet.peers["robot1"].get("/health").json()


def test_entity_refresh_is_one_conditional_request(fleet: Fleet) -> None:
    decl = fleet.peers["robot1"].get("/x-vendor-entities")
    assert decl.status == 200 and decl.headers["etag"]
    assert {a["id"] for a in decl.json()["apps"]} == {"temp_sensor", "calibration",
                                                      "long_calibration"}
    again = fleet.peers["robot1"].get("/x-vendor-entities",
                                      headers={"If-None-Match": decl.headers["etag"]})
    assert again.status == 304 and again.body == b""
    # the primary's refreshes of an unchanged peer: 304s, one request each
    before = len(fleet.junk.requests(r"/x-vendor-entities"))
    time.sleep(2.5)
    refreshes = fleet.junk.requests(r"/x-vendor-entities")[before:]
    assert refreshes and all(r.status == 304 for r in refreshes)
    assert all(r.headers.get("If-None-Match") for r in refreshes)


# -- item ids -----------------------------------------------------------------------------


def test_rule4_data_topic_from_two_gateways_is_qualified(fleet: Fleet) -> None:
    body = fleet.get(f"/components/{fleet.host}/data").json()
    items = by_id(body)
    local_id, peer_id = f"temp_sensor:{TEMP}", f"robot1__temp_sensor:{TEMP}"
    assert {local_id, peer_id, SCAN} <= set(items)
    assert TEMP not in items
    assert items[peer_id]["x-vendor"]["member_ids"] == ["robot1__temp_sensor"]
    assert items[SCAN]["x-vendor"]["member_ids"] == ["lidar_sensor"]
    xv = body["x-vendor"]
    assert xv["entity_id"] == fleet.host and xv["total_count"] == len(items)
    assert {"local", "robot1", "robot2", "robot3"} <= set(xv["contributors"])
    assert "partial" not in xv and "failed_peers" not in xv
    # on a function only robot1 and the primary contribute to, the same rule applies
    func = by_id(fleet.get("/functions/powertrain/data").json())
    assert {local_id, peer_id} <= set(func)


def test_rules_1_to_3_for_operations_across_gateways(fleet: Fleet) -> None:
    ops = by_id(fleet.get(f"/components/{fleet.host}/operations").json())
    # rule 1: bare short names; rule 2: `calibrate` is carried by robot1 and robot2
    assert "long_calibration" in ops
    assert {"calibration:calibrate", "lidar_sensor:calibrate"} <= set(ops)
    assert "calibrate" not in ops
    # rule 3: one member (robot3's `multi`) with the short name `reset` twice
    assert {"fleet_test/a/reset", "fleet_test/b/reset"} <= set(ops)
    assert ops["fleet_test/a/reset"]["x-vendor"]["member_ids"] == ["multi"]
    member = by_id(fleet.get("/apps/multi/operations").json())
    assert set(member) == {"fleet_test/a/reset", "fleet_test/b/reset"}


def test_rule5_configurations_are_reattributed(fleet: Fleet) -> None:
    body = fleet.get("/functions/powertrain/configurations").json()
    items = by_id(body)
    assert "robot1__temp_sensor:min_temp" in items and "temp_sensor:min_temp" in items
    assert items["robot1__temp_sensor:min_temp"]["x-vendor"]["member_ids"] == [
        "robot1__temp_sensor"]
    assert "calibration:calibration_offset" in items


def test_rule6_bare_ids_naming_one_item_work_on_every_route(fleet: Fleet) -> None:
    comp = f"/components/{fleet.host}"
    # a bare id unique in the fleet, owned by a peer: re-addressed to the owning gateway
    op = fleet.get(f"{comp}/operations/long_calibration")
    assert op.status == 200 and op.json()["item"]["x-vendor"]["ros2_kind"] == "action"
    scan = fleet.get(f"{comp}/data/{enc(SCAN)}")
    assert scan.status == 200 and scan.json()["id"] == SCAN
    assert fleet.get(f"{comp}/data/{enc(SCAN[1:])}").status == 200
    # member-qualified ids work too, for local and for peer members
    assert fleet.get(f"{comp}/data/{enc('robot1__temp_sensor:' + TEMP)}").status == 200
    assert fleet.get(f"{comp}/data/{enc('temp_sensor:' + TEMP)}").status == 200
    assert fleet.get(f"{comp}/operations/{enc('lidar_sensor:calibrate')}").status == 200
    param = fleet.get(f"{comp}/configurations/{enc('robot1__temp_sensor:min_temp')}")
    assert param.status == 200 and param.json()["name"] == "min_temp"
    # a bare parameter name only one member in the fleet has
    offset = fleet.get(f"{comp}/configurations/calibration_offset")
    assert offset.status == 200 and offset.json()["name"] == "calibration_offset"
    # a bare id naming several items is refused with the candidates
    amb = assert_error(fleet.get(f"{comp}/operations/calibrate"), 404, "resource-not-found")
    assert set(amb["parameters"]["candidates"]) == {"calibration:calibrate",
                                                    "lidar_sensor:calibrate"}
    amb = assert_error(fleet.get(f"{comp}/data/{enc(TEMP)}"), 404)
    assert len(amb["parameters"]["candidates"]) == 2
    assert_error(fleet.get(f"{comp}/operations/no_such_op"), 404)


# -- forwarding ---------------------------------------------------------------------------


def test_forwarded_reads(fleet: Fleet) -> None:
    read = fleet.get(f"/apps/robot1__temp_sensor/data/{enc(TEMP)}")
    assert read.status == 200, read
    body = read.json()
    assert body["x-vendor"]["entity_id"] == "robot1__temp_sensor"  # renamed in the answer
    assert "temperature" in body["data"]
    ops = fleet.get("/apps/long_calibration/operations").json()
    assert ids(ops) == ["long_calibration"]
    assert fleet.get("/apps/lidar_sensor/configurations/min_range").json()["value"] == 10.0
    assert fleet.get("/apps/robot1__temp_sensor/logs").status == 200


def test_a_forwarded_error_names_the_app_by_its_fleet_id(fleet: Fleet) -> None:
    missing = fleet.get(f"/apps/robot1__temp_sensor/data/{enc('/no/such/topic')}")
    assert missing.status == 404, missing
    err = missing.json()
    assert "'robot1__temp_sensor'" in err["message"], err  # as the caller named it
    assert "'temp_sensor'" not in err["message"], err


def test_forwarded_writes(fleet: Fleet) -> None:
    put = fleet.primary.request("PUT", "/apps/calibration/configurations/calibration_offset",
                                body={"value": 2.5})
    assert put.status == 200, put
    via_function = fleet.get(f"/functions/powertrain/configurations/"
                             f"{enc('calibration:calibration_offset')}")
    assert via_function.json()["value"] == 2.5
    call = fleet.primary.request("POST", "/apps/calibration/operations/calibrate/executions",
                                 body={})
    assert call.status == 200, call
    assert call.json()["parameters"]["message"] == "engine calibrated with offset 2.5"
    published = fleet.primary.request("PUT", f"/apps/robot1__temp_sensor/data/{enc(TEMP)}",
                                      body={"temperature": 1.0, "variance": 0.0})
    assert published.status == 200, published
    bad = fleet.primary.request("PUT", "/apps/calibration/configurations/calibration_offset",
                                body={"value": "warm"})
    assert_error(bad, 400)
    reset = fleet.primary.request("DELETE", "/apps/calibration/configurations/calibration_offset")
    assert reset.status == 204


def test_action_execution_through_the_primary(fleet: Fleet) -> None:
    comp = f"/components/{fleet.host}"
    start = fleet.primary.request("POST", f"{comp}/operations/long_calibration/executions",
                                  body={"parameters": {"order": 3}})
    assert start.status == 202, start
    location = start.headers["location"]
    assert location.startswith("/api/v1/apps/long_calibration/operations/long_calibration/"
                               "executions/")

    def done() -> dict[str, Any] | None:
        status = fleet.primary.get(location[len("/api/v1"):]).json()
        return status if status["status"] == "completed" else None
    final = wait_until(done, 20, "the action to complete")
    assert final["parameters"]["sequence"] == [0, 1, 1, 2]
    listed = fleet.get("/apps/long_calibration/operations/long_calibration/executions").json()
    assert final["id"] in ids(listed)


def test_reset_all_on_a_merged_entity_names_remote_members(fleet: Fleet) -> None:
    resp = fleet.primary.request("DELETE", "/functions/powertrain/configurations")
    assert resp.status == 207, resp
    items = {i["id"]: i for i in resp.json()["items"]}
    assert items["temp_sensor"]["gateway"] == "local" and items["temp_sensor"]["status"] == 204
    assert items["calibration"]["gateway"] == "robot1"
    assert items["robot1__temp_sensor"]["gateway"] == "robot1"
    assert items["calibration"]["status"] != 204


def test_client_id_and_peer_credentials_are_forwarded(fleet: Fleet) -> None:
    before = len(fleet.junk.seen)
    fleet.get(f"/components/{fleet.host}/data",
              headers={"X-Client-Id": "client-7", "Authorization": "Bearer caller"})
    calls = [s for s in fleet.junk.seen[before:] if s.path.endswith("/data")]
    assert calls, "the junk peer was not asked"
    # without forward_auth the gateway's own credential goes to a configured peer
    assert calls[-1].headers.get("X-Client-Id") == "client-7"
    assert calls[-1].headers.get("Authorization") == "Bearer fleet-secret"
    assert "X-Vendor-No-Fan-Out" in calls[-1].headers
    probes = fleet.junk.requests(r"^/api/v1/health$")
    assert probes and probes[-1].headers.get("Authorization") == "Bearer fleet-secret"


def test_version_info_fans_out_and_no_fan_out_header(fleet: Fleet) -> None:
    body = fleet.get("/version-info").json()
    peers = {i.get("x-vendor", {}).get("peer") for i in body["items"]}
    assert peers == {None, "robot1", "robot2", "robot3", "junk"}
    alone = fleet.get("/version-info", headers={"X-Vendor-No-Fan-Out": "false"}).json()
    assert len(alone["items"]) == 1
    data = fleet.get(f"/components/{fleet.host}/data",
                     headers={"X-Vendor-No-Fan-Out": "0"}).json()
    assert set(ids(data)) == {TEMP}  # the primary's own topic, bare


def test_fault_recording_download_through_the_primary(fleet: Fleet) -> None:
    def recording() -> dict[str, Any] | None:
        resp = fleet.get("/apps/lidar_sensor/bulk-data/rosbags")
        items = resp.json().get("items", []) if resp.status == 200 else []
        return items[0] if items else None
    desc = wait_until(recording, 30, "a rosbag of the lidar faults")
    faults = fleet.get("/apps/lidar_sensor/faults").json()
    assert "LIDAR_RANGE_INVALID" in {f["fault_code"] for f in faults["items"]}
    path = f"/apps/lidar_sensor/bulk-data/rosbags/{desc['id']}"
    whole = fleet.get(path)
    assert whole.status == 200 and whole.headers["content-type"] == "application/x-mcap"
    assert whole.body[:8] == b"\x89MCAP0\r\n" and len(whole.body) == desc["size"]
    assert "attachment" in whole.headers["content-disposition"]
    part = fleet.get(path, headers={"Range": "bytes=0-99"})
    assert part.status == 206 and part.body == whole.body[:100]
    assert part.headers["content-range"] == f"bytes 0-99/{len(whole.body)}"
    direct = fleet.peers["robot2"].get(path)
    assert direct.body == whole.body


def test_global_and_entity_faults_fan_out(fleet: Fleet) -> None:
    def lidar_faults() -> list[dict[str, Any]]:
        items = fleet.get("/faults").json()["items"]
        return [f for f in items if f["fault_code"].startswith("LIDAR_")]
    faults = wait_until(lidar_faults, 20, "robot2's lidar faults on the primary")
    assert all(f["x-vendor"]["peer"] == "robot2" for f in faults)
    body = fleet.get("/faults").json()
    assert {"local", "robot1", "robot2", "robot3"} <= set(body["x-vendor"]["contributors"])
    assert isinstance(body["muted_count"], int) and isinstance(body["cluster_count"], int)
    # X-Vendor-No-Fan-Out is not honoured by the global list
    alone = fleet.get("/faults", headers={"X-Vendor-No-Fan-Out": "1"}).json()
    assert {f["fault_code"] for f in alone["items"]} >= {f["fault_code"] for f in faults}
    # the host component's list holds the faults robot2 scopes to it; honoured there
    comp = fleet.get(f"/components/{fleet.host}/faults").json()
    assert "LIDAR_RANGE_INVALID" in {f["fault_code"] for f in comp["items"]}
    local = fleet.get(f"/components/{fleet.host}/faults",
                      headers={"X-Vendor-No-Fan-Out": "1"}).json()
    assert "LIDAR_RANGE_INVALID" not in {f["fault_code"] for f in local["items"]}
    # a peer-owned entity's faults are forwarded
    perception = fleet.get("/functions/perception/faults").json()
    assert "LIDAR_RANGE_INVALID" in {f["fault_code"] for f in perception["items"]}


def test_fault_stream_relays_peer_events(fleet: Fleet) -> None:
    import http.client
    import json

    conn = http.client.HTTPConnection("127.0.0.1", fleet.primary.port, timeout=20)
    conn.request("GET", "/api/v1/faults/stream")
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("Content-Type") == "text/event-stream"
    try:
        time.sleep(1.0)  # the relays connect while this client is attached
        clear = fleet.primary.request("DELETE", "/apps/lidar_sensor/faults/LIDAR_RANGE_INVALID")
        assert clear.status == 204, clear
        event: dict[str, Any] = {}
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            line = resp.fp.readline().decode().rstrip("\n")
            if line.startswith("id: "):
                event = {"id": int(line[4:])}
            elif line.startswith("event: "):
                event["event"] = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
                if data.get("x-vendor", {}).get("peer") == "robot2" and \
                        data["fault"]["fault_code"] == "LIDAR_RANGE_INVALID":
                    event["data"] = data
                    break
        assert "data" in event, "no relayed event from robot2"
        assert event["event"] in ("fault_cleared", "fault_confirmed", "fault_updated")
        assert event["id"] >= 1  # numbered by the primary's own stream
    finally:
        conn.close()


# -- spoiled peers ------------------------------------------------------------------------


def _junk_failure(fleet: Fleet, rule: str, path: str) -> dict[str, Any]:
    fleet.junk.rules = {rule: path}
    try:
        return fleet.get(f"/components/{fleet.host}/data").json()  # type: ignore[no-any-return]
    finally:
        fleet.junk.rules = {}


def test_a_peer_answering_garbage(fleet: Fleet) -> None:
    body = _junk_failure(fleet, r"/components/.*/data$", "garbage")
    xv = body["x-vendor"]
    assert xv["partial"] is True and xv["failed_peers"] == ["junk"]
    assert xv["peer_failures"] == [{"peer": "junk", "reason": "invalid-response"}]
    assert f"robot1__temp_sensor:{TEMP}" in ids(body)  # the other peers still count


def test_a_peer_answering_oversize_bodies(fleet: Fleet) -> None:
    body = _junk_failure(fleet, r"/components/.*/data$", "oversize")
    assert body["x-vendor"]["peer_failures"] == [{"peer": "junk", "reason": "too-large"}]


def test_a_peer_answering_an_error_status(fleet: Fleet) -> None:
    body = _junk_failure(fleet, r"/components/.*/data$", "401")
    assert body["x-vendor"]["peer_failures"] == [{"peer": "junk", "reason": "error-status"}]


def test_invalid_peer_items_are_dropped_and_unknown_fields_stripped(fleet: Fleet) -> None:
    body = _junk_failure(fleet, r"/components/.*/data$", "bad-items")
    xv = body["x-vendor"]
    assert "partial" not in xv
    assert xv["peer_dropped_items"] == [
        {"peer": "junk", "error": "'id' must be a string", "source_id": "42"}]
    smuggler = by_id(body)["/junk/topic"]
    assert "smuggled" not in smuggler and "extra" not in smuggler["x-vendor"]
    assert smuggler["x-vendor"]["ros2"] == {"direction": "publish", "topic": "/junk/topic",
                                            "type": "std_msgs/msg/String"}


def test_a_merge_follows_each_change_of_a_peer_answer(fleet: Fleet) -> None:
    # the primary reuses a merge while every peer answers the same bytes (federation
    # service): a peer whose answer changes changes the merge, and back
    path = f"/components/{fleet.host}/data"
    first = fleet.get(path).json()
    assert fleet.get(path).json()["items"] == first["items"]
    spoiled = _junk_failure(fleet, r"/components/.*/data$", "bad-items")
    assert "/junk/topic" in by_id(spoiled) and "/junk/topic" not in by_id(first)
    assert "/junk/topic" not in by_id(fleet.get(path).json())


def test_a_declaration_that_cannot_be_read_is_discarded_whole(fleet: Fleet) -> None:
    fleet.junk.rules = {r"/x-vendor-entities": "garbage"}
    try:
        time.sleep(2.5)  # two refresh periods of garbage
        comps = fleet.get("/components").json()["items"]
        assert "junk" in comps[0]["x-vendor"]["contributors"]  # the last set is kept
        health = {p["name"]: p["status"] for p in fleet.get("/health").json()["peers"]}
        assert health["junk"] == "online"  # its health check still passes
    finally:
        fleet.junk.rules = {}


def test_a_peer_refusing_the_primary_is_offline(fleet: Fleet) -> None:
    fleet.junk.rules = {r".*": "401"}
    try:
        wait_until(lambda: {p["name"]: p["status"] for p in fleet.get("/health").json()["peers"]
                            }["junk"] == "offline", 10, "junk offline")
        body = fleet.get(f"/components/{fleet.host}/data").json()
        assert {"peer": "junk", "reason": "unreachable"} in body["x-vendor"]["peer_failures"]
    finally:
        fleet.junk.rules = {}
    wait_until(lambda: {p["name"]: p["status"] for p in fleet.get("/health").json()["peers"]
                        }["junk"] == "online", 10, "junk online again")


# -- a peer stopped, resumed and killed -----------------------------------------------------


def _in_thread(fleet: Fleet, method: str, path: str) -> tuple[threading.Thread, list[Response]]:
    out: list[Response] = []
    thread = threading.Thread(target=lambda: out.append(fleet.primary.request(method, path)))
    thread.start()
    return thread, out


def _statuses(fleet: Fleet) -> dict[str, str]:
    return {p["name"]: p["status"] for p in fleet.get("/health").json()["peers"]}


ROBOT3_APPS = {"rpm_sensor", "unresponsive_param", "multi"}


def _robot3_ready(fleet: Fleet) -> None:
    """robot3's gateway sees all its nodes and the primary serves them available."""
    def ready() -> bool | None:
        own = {a["id"] for a in fleet.peers["robot3"].get("/apps").json()["items"]}
        apps = by_id(fleet.get("/apps").json())
        if ROBOT3_APPS <= own and all(
                a in apps and "available" not in apps[a]["x-vendor"] for a in ROBOT3_APPS):
            return True
        print("robot3:", sorted(own), {a: apps.get(a) for a in ROBOT3_APPS})
        return None
    wait_until(ready, 30, "robot3's apps")


def test_a_peer_killed_mid_request(fleet: Fleet) -> None:
    _robot3_ready(fleet)
    gw = fleet.peers["robot3"]
    comp = f"/components/{fleet.host}"
    forward, fwd_out = _in_thread(fleet, "GET", "/apps/unresponsive_param/configurations")
    fan_out, fan_out_out = _in_thread(fleet, "GET", f"{comp}/configurations")
    time.sleep(0.3)
    os.kill(gw.proc.pid, signal.SIGKILL)  # type: ignore[union-attr]
    gw.proc.wait(10)  # type: ignore[union-attr]
    fan_out.join(30)
    forward.join(30)
    xv = fan_out_out[0].json()["x-vendor"]
    assert xv["partial"] is True
    assert {"peer": "robot3", "reason": "unreachable"} in xv["peer_failures"]
    err = assert_error(fwd_out[0], 502, "vendor-error", "x-vendor-peer-unavailable")
    assert err["parameters"]["peer"] == "robot3"
    wait_until(lambda: _statuses(fleet)["robot3"] == "offline", 15, "robot3 offline")
    assert by_id(fleet.get("/apps").json())["multi"]["x-vendor"]["available"] is False
    assert_error(fleet.get("/apps/multi/operations"), 504, "not-responding")
    body = fleet.get(f"{comp}/operations").json()
    assert "lidar_sensor:calibrate" in ids(body)
    assert {"peer": "robot3", "reason": "unreachable"} in body["x-vendor"]["peer_failures"]
    # restarted on the same port, it is probed back online and serves again
    gw.start()
    wait_until(lambda: _statuses(fleet)["robot3"] == "online", 30, "robot3 back online")
    _robot3_ready(fleet)
    assert fleet.get("/apps/multi/operations").status == 200


def test_a_peer_stopped_mid_request_then_resumed(fleet: Fleet) -> None:
    _robot3_ready(fleet)
    pid = fleet.peers["robot3"].proc.pid  # type: ignore[union-attr]
    comp = f"/components/{fleet.host}"
    # robot3 needs ~1 s for the parameters of its unresponsive node: stop it meanwhile
    forward, fwd_out = _in_thread(fleet, "GET", "/apps/unresponsive_param/configurations")
    fan_out, fan_out_out = _in_thread(fleet, "GET", f"{comp}/configurations")
    time.sleep(0.3)
    os.kill(pid, signal.SIGSTOP)
    try:
        fan_out.join(30)
        forward.join(30)
        body = fan_out_out[0].json()
        assert fan_out_out[0].status == 200
        xv = body["x-vendor"]
        assert xv["partial"] is True and "robot3" in xv["failed_peers"]
        reason = {f["peer"]: f["reason"] for f in xv["peer_failures"]}["robot3"]
        assert reason in ("timeout", "unreachable")
        assert "calibration:calibration_offset" in ids(body)
        err = assert_error(fwd_out[0], 504, "not-responding")
        assert "aggregation" in err["message"]
        # offline: its entities are served unavailable, forwards answer 504 at once
        wait_until(lambda: _statuses(fleet)["robot3"] == "offline", 15, "robot3 offline")
        apps = by_id(fleet.get("/apps").json())
        assert apps["rpm_sensor"]["x-vendor"]["available"] is False
        assert "available" not in apps["lidar_sensor"]["x-vendor"]
        quick = fleet.get("/apps/rpm_sensor/data")
        assert_error(quick, 504, "not-responding")
        fast = fleet.get(f"{comp}/data").json()["x-vendor"]
        assert {"peer": "robot3", "reason": "unreachable"} in fast["peer_failures"]
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_until(lambda: _statuses(fleet)["robot3"] == "online", 15, "robot3 online again")
    # Back online: nothing of robot3 is served unavailable, fan-outs are whole again. (Its own
    # ROS graph may take a while to come back: the nodes' 3 s DDS lease ran out meanwhile.)
    # The peer's status turns online first; its entities follow with the primary's next pull.
    def robot3_available() -> bool:
        apps = by_id(fleet.get("/apps").json())
        return all(apps[a]["x-vendor"].get("available", True) for a in ROBOT3_APPS if a in apps)
    wait_until(robot3_available, 30, "robot3's apps served available again")
    assert "partial" not in fleet.get(f"{comp}/data").json()["x-vendor"]
    versions = fleet.get("/version-info").json()["items"]
    assert "robot3" in {i.get("x-vendor", {}).get("peer") for i in versions}
