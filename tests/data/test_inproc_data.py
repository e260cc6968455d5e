"""Data in process (the data handlers, not edited here): listing, reads from the fake sample
pool (CDR bytes of std_msgs), writes published through it, and the errors of both profiles."""

from __future__ import annotations

from tests.inproc.inproc_gateway import Gw, Runner
from tests.inproc.inproc_robot import (
    COMMAND,
    FLOAT32,
    LIDAR_STATUS,
    PRESSURE,
    STRING,
    FakeNode,
    cdr_float32,
    default_nodes,
)

APP = "/api/v1/apps/actuator"
STAMP = 1_700_000_000_000_000_000


def test_data_lists_the_apps_topics(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{APP}/data")
        assert status == 200
        items = {i["id"]: i for i in body["items"]}
        assert sorted(items) == [COMMAND, PRESSURE]
        assert items[PRESSURE][gw.xv]["ros2"] == {"direction": "publish", "topic": PRESSURE,
                                                 "type": FLOAT32}
        assert items[COMMAND][gw.xv]["ros2"]["direction"] == "subscribe"
        assert items[PRESSURE]["category"] == "currentData"
        assert body[gw.xv] == {"total_count": 2, "entity_id": "actuator"}
        status, body = await gw.json("GET", "/api/v1/functions/sensors/data")
        assert [i["id"] for i in body["items"]] == [LIDAR_STATUS]
        status, body = await gw.json("GET", "/api/v1/functions/chassis/data")
        assert sorted(i["id"] for i in body["items"]) == [COMMAND, PRESSURE]  # merged once

    gateway(scenario)


def test_read_the_newest_sample(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{APP}/data{PRESSURE}")
        assert status == 200
        assert (body["id"], body["data"], body[gw.xv]["status"]) == (
            PRESSURE, {}, "metadata_only")  # nothing received yet
        gw.pool.put(PRESSURE, FLOAT32, cdr_float32(42.5), STAMP)
        for url in (f"{APP}/data{PRESSURE}", f"{APP}/data/{PRESSURE}"):  # '//': the id's '/'
            status, body = await gw.json("GET", url)
            assert status == 200
            assert body["data"] == {"data": 42.5}
            assert body[gw.xv]["status"] == "data"
            assert body[gw.xv]["timestamp"] == STAMP
            assert body[gw.xv]["ros2"] == {"topic": PRESSURE, "type": FLOAT32}
            assert (body[gw.xv]["publisher_count"], body[gw.xv]["subscriber_count"]) == (1, 1)
        # each read that found a sample counted one pool hit and refreshed the topic's place
        assert gw.pool.hits == 2 and gw.pool.refreshed == [PRESSURE, PRESSURE]
        gw.pool.put(PRESSURE, FLOAT32, cdr_float32(43.0), STAMP + 1)  # a newer one replaces it
        status, body = await gw.json("GET", f"{APP}/data{PRESSURE}")
        assert body["data"] == {"data": 43.0} and body[gw.xv]["timestamp"] == STAMP + 1

    gateway(scenario)


def test_read_a_topic_the_app_lacks(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        url = f"{APP}/data/nobody/here"
        if gw.profile == "spec":
            body = await gw.error("GET", url, 404)
            assert body["error_code"] == "resource-not-found"
            assert body["message"] == "Data item 'nobody/here' not found on app 'actuator'"
            assert body["parameters"] == {"entity_id": "actuator", "data_id": "nobody/here"}
        else:  # the reference answers any path, metadata only
            status, body = await gw.json("GET", url)
            assert status == 200
            assert (body["id"], body["data"]) == ("/nobody/here", {})
            assert body[gw.xv]["status"] == "metadata_only"
        body = await gw.error("GET", f"/api/v1/apps/nope/data{PRESSURE}", 404)
        assert body["parameters"]["entity_id"] == "nope"

    gateway(scenario)


def test_write_publishes_on_the_topic(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("PUT", f"{APP}/data{COMMAND}",
                                     json={"type": FLOAT32, "data": {"data": 1.5}})
        assert status == 200
        assert (body["id"], body["data"]) == (COMMAND, {"data": 1.5})
        assert (body[gw.xv]["status"], body[gw.xv]["subscribers_matched"]) == ("published", 1)
        ((topic, type_name, msg),) = gw.pool.published
        assert (topic, type_name, msg.data) == (COMMAND, FLOAT32, 1.5)
        status, body = await gw.json("PUT", f"/api/v1/apps/scanner/data{LIDAR_STATUS}",
                                     json={"data": "ok"})  # the bare message
        assert status == 200
        assert gw.pool.published[-1][:2] == (LIDAR_STATUS, STRING)
        assert gw.pool.published[-1][2].data == "ok"

    gateway(scenario)


def test_write_errors(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("PUT", f"{APP}/data{COMMAND}", 400,
                              json={"type": STRING, "data": {"data": "x"}})
        assert body["error_code"] == "invalid-request"
        assert body["message"] == ("Request body validation failed: type: expected "
                                   f"{FLOAT32}, the type on the ROS graph")
        assert body["parameters"]["fields"] == [
            {"field": "type", "message": f"expected {FLOAT32}, the type on the ROS graph"}]
        body = await gw.error("PUT", f"{APP}/data{COMMAND}", 400, json={"data": "x"})
        assert body["parameters"]["fields"] == [
            {"field": "data", "message": "expected float32, got string"}]
        assert body["parameters"]["topic"] == COMMAND
        body = await gw.error("PUT", f"{APP}/data{COMMAND}", 400, data=b"xx",
                              headers={"Content-Type": "application/json"})
        assert body["error_code"] == "invalid-request"
        assert body["message"].startswith("Malformed JSON: the request body is not valid JSON")
        assert gw.pool.published == []  # nothing reached the topic

    gateway(scenario)


def test_the_list_carries_type_info(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{APP}/data")
        item = next(i for i in body["items"] if i["id"] == PRESSURE)
        xv = item[gw.xv]
        assert xv["member_ids"] == ["actuator"]
        schema = xv["type_info"]["schema"]
        assert schema["type"] == "object" and schema["properties"]["data"]["type"] == "number"
        assert xv["type_info"]["default_value"] == {"data": 0.0}

    gateway(scenario)


def test_metadata_only_without_a_publisher(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{APP}/data{COMMAND}")  # nobody publishes it
        assert status == 200 and body["data"] == {}
        assert body[gw.xv]["status"] == "metadata_only"
        assert (body[gw.xv]["publisher_count"], body[gw.xv]["subscriber_count"]) == (0, 1)

    gateway(scenario)


def test_topics_of_another_app_or_entity(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        if gw.profile == "spec":  # a topic of another app is not this app's
            body = await gw.error("GET", f"{APP}/data{LIDAR_STATUS}", 404)
            assert body["parameters"]["data_id"] == LIDAR_STATUS.lstrip("/")
        body = await gw.error("PUT", f"/api/v1/apps/ghost/data{COMMAND}", 404, json={"x": 1})
        assert body["parameters"]["entity_id"] == "ghost"
        assert gw.pool.published == []

    gateway(scenario)


def test_put_body_errors_name_the_problem(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        url = f"{APP}/data{COMMAND}"
        body = await gw.error("PUT", url, 400, json={"data": "yes"})
        assert body["error_code"] == "invalid-request"
        assert body["parameters"]["field"] == "data" and "float32" in body["message"]
        body = await gw.error("PUT", url, 400, json={"colour": 1})
        assert body["parameters"]["field"] == "colour"
        for raw in (b"[1, 2]", b""):
            body = await gw.error("PUT", url, 400, data=raw,
                                  headers={"Content-Type": "application/json"})
            assert body["error_code"] == "invalid-request"
        assert gw.pool.published == []

    gateway(scenario)


def test_a_service_or_action_type_is_not_a_message_type(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        for declared in ("std_srvs/srv/Trigger", "example_interfaces/action/Fib"):
            for topic in ("/not/on/the/graph", COMMAND):
                body = await gw.error("PUT", f"{APP}/data{topic}", 400,
                                      json={"type": declared, "data": {}})
                assert body["error_code"] == "invalid-parameter"
                assert body["message"] == "Invalid message type format"
                assert body["parameters"]["type"] == declared
                assert "package/msg/Type" in body["parameters"]["details"]
        assert gw.pool.published == []

    gateway(scenario)


def test_a_nested_fields_error_names_its_path(gateway: Runner) -> None:
    temperature = "/engine/temperature"
    nodes = default_nodes() + [FakeNode("thermo", "/engine", publishers=[
        (temperature, "sensor_msgs/msg/Temperature")])]

    async def scenario(gw: Gw) -> None:
        body = await gw.error("PUT", f"/api/v1/apps/thermo/data{temperature}", 400,
                              json={"header": {"stamp": {"sec": "x"}}})
        assert body["error_code"] == "invalid-request"
        assert body["parameters"]["field"] == "header.stamp.sec"
        assert gw.pool.published == []

    gateway(scenario, nodes=nodes)


# --- wire profiles (medkit-wire.md rows) -------------------------------------------------------


def test_data_list_name_and_read_body(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", f"{APP}/data")
        item = next(i for i in body["items"] if i["id"] == PRESSURE)
        assert item["name"] == PRESSURE and item["category"] == "currentData"
        assert item[gw.xv]["ros2"]["topic"] == PRESSURE
        gw.pool.put(PRESSURE, FLOAT32, cdr_float32(1.0), STAMP)
        status, body = await gw.json("GET", f"{APP}/data{PRESSURE}")
        xv = body[gw.xv]
        assert xv["status"] == "data" and isinstance(xv["timestamp"], int)
        assert xv["ros2"] == {"topic": PRESSURE, "type": FLOAT32}
        assert xv["publisher_count"] == 1 and xv["entity_id"] == "actuator"
        assert "data" in xv["type_info"]["default_value"]
        # a topic on the graph that is not this app's
        if gw.profile == "spec":
            await gw.error("GET", f"{APP}/data{LIDAR_STATUS}", 404)
        else:
            status, body = await gw.json("GET", f"{APP}/data{LIDAR_STATUS}")
            assert status == 200 and body[gw.xv]["status"] in ("data", "metadata_only")

    gateway(scenario)


def test_data_write_topic_the_entity_lacks(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        envelope = {"type": FLOAT32, "data": {"data": 1.5}}
        if gw.profile == "spec":
            body = await gw.error("PUT", f"{APP}/data/wire_test/probe", 404, json=envelope)
            assert body["error_code"] == "resource-not-found"
            assert gw.pool.published == []
            return
        status, body = await gw.json("PUT", f"{APP}/data/wire_test/probe", json=envelope)
        assert status == 200, body
        assert body[gw.xv]["ros2"] == {"topic": "/wire_test/probe", "type": FLOAT32}
        # a bare body needs the topic on the graph for its type: the reference's 400 naming it
        body = await gw.error("PUT", f"{APP}/data/wire_test/other", 400, json={"data": 1.5})
        assert body["error_code"] == "invalid-request"
        assert body["message"].startswith("type: missing required field"), body

    gateway(scenario)


def test_data_put_body_forms(gateway: Runner) -> None:
    forms: list[tuple[dict[str, object], float]] = [
        ({"type": FLOAT32, "data": {"data": 1.5}}, 1.5),  # the envelope
        ({"data": 2.5}, 2.5),  # the bare message
        ({"type": FLOAT32, "data": {"data": 3.5}, "extra": 1}, 3.5),
        ({"value": {"type": FLOAT32, "data": {"data": 4.5}}}, 4.5),
    ]

    async def scenario(gw: Gw) -> None:
        for body, value in forms:
            status, answer = await gw.json("PUT", f"{APP}/data{COMMAND}", json=body)
            assert status == 200, (body, answer)
            assert answer["id"] == COMMAND and answer["data"] == {"data": value}
            xv = answer[gw.xv]
            assert xv["ros2"] == {"topic": COMMAND, "type": FLOAT32}
            assert xv["entity_id"] == "actuator" and xv["status"] == "published"
            assert gw.pool.published[-1][2].data == value

    gateway(scenario)


def test_data_put_type_and_field_errors(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        url = f"{APP}/data{COMMAND}"
        body = await gw.error("PUT", url, 400, json={"type": "Float32", "data": {"data": 1}})
        assert body["error_code"] == "invalid-parameter"
        assert body["message"] == "Invalid message type format"
        assert body["parameters"]["type"] == "Float32"
        body = await gw.error("PUT", url, 400, json={"type": FLOAT32, "data": {"data": "yes"}})
        assert body["error_code"] == "invalid-request"
        assert body["parameters"]["fields"][0]["field"] == "data.data"
        assert gw.pool.published == []

    gateway(scenario)
