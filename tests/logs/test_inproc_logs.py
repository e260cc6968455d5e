"""Logs in process (the logs handlers): /rosout records delivered to the gateway's real
subscription by the fake bridge, listed per app, function and component, filtered by the
query and the entity's log configuration; the configuration's rules and errors."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.inproc.inproc_gateway import Gw, Runner
from tests.inproc.inproc_robot import ACTUATOR, HOST, MONITOR, SCANNER

API = "/api/v1"
LOGS = f"{API}/apps/actuator/logs"
CFG = f"{LOGS}/configuration"
STAMP = 1_700_000_000_000_000_000
DEBUG, INFO, WARN, ERROR, FATAL = 10, 20, 30, 40, 50
ISO_NS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$")
DEFAULT = {"severity_filter": "debug", "max_entries": 100}


def logger(fqn: str) -> str:
    """The ROS logger name of a node (its fqn, dotted)."""
    return fqn.strip("/").replace("/", ".")


def robot_logs(gw: Gw) -> None:
    """One line of each severity from the actuator, one from the monitor and the scanner."""
    for k, level in enumerate((DEBUG, INFO, WARN, ERROR, FATAL)):
        gw.bridge.rosout(logger(ACTUATOR), level, f"actuator line {k}", STAMP + k,
                         file="actuator.py", function="tick", line=10 + k)
    gw.bridge.rosout(logger(MONITOR), WARN, "pressure low", STAMP + 10)
    gw.bridge.rosout(logger(SCANNER), INFO, "scan ok", STAMP + 11)


def severities(body: dict[str, Any]) -> list[str]:
    return [i["severity"] for i in body["items"]]


def nodes(body: dict[str, Any]) -> set[str]:
    return {i["context"]["node"] for i in body["items"]}


def test_an_apps_entries(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        status, body = await gw.json("GET", LOGS)
        assert (status, body["items"]) == (200, [])
        robot_logs(gw)
        status, body = await gw.json("GET", LOGS)
        assert status == 200
        assert severities(body) == ["debug", "info", "warning", "error", "fatal"]  # oldest first
        assert body[gw.xv]["entity_id"] == "actuator"
        assert body[gw.xv]["total_count"] == 5
        entry = body["items"][3]
        assert entry["message"] == "actuator line 3"
        assert ISO_NS.match(entry["timestamp"]), entry["timestamp"]
        assert entry["timestamp"] == "2023-11-14T22:13:20.000000003Z"
        assert entry["context"] == {"node": ACTUATOR, "function": "tick", "file": "actuator.py",
                                    "line": 13}
        ids = [i["id"] for i in body["items"]]
        if gw.profile == "medkit":  # the reference's ids: log_<n>
            assert all(re.fullmatch(r"log_\d+", i) for i in ids), ids
        else:
            assert all(i.isdigit() for i in ids), ids
        assert len(set(ids)) == 5
        assert nodes(body) == {ACTUATOR}  # the other nodes' lines stay out
        # empty context fields are omitted
        status, body = await gw.json("GET", f"{API}/apps/monitor/logs")
        assert [i["context"] for i in body["items"]] == [{"node": MONITOR}]

    gateway(scenario)


def test_a_function_and_the_component_aggregate_their_apps(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        robot_logs(gw)
        gw.bridge.rosout(logger(ACTUATOR) + ".rclcpp", INFO, "child logger", STAMP + 20)
        status, body = await gw.json("GET", f"{API}/functions/chassis/logs")
        assert status == 200
        assert nodes(body) == {ACTUATOR, MONITOR}
        assert len(body["items"]) == 7
        assert body["items"][-1]["message"] == "child logger"  # a child logger is its node's
        xv = body[gw.xv]
        assert (xv["entity_id"], xv["aggregation_level"], xv["aggregated"]) == (
            "chassis", "function", True)
        assert sorted(xv["aggregation_sources"]) == ["actuator", "monitor"]
        status, body = await gw.json("GET", f"{API}/components/{HOST}/logs")
        assert status == 200
        assert nodes(body) == {ACTUATOR, MONITOR, SCANNER}
        assert body[gw.xv]["aggregation_level"] == "component"
        assert body[gw.xv]["app_count"] == 3
        stamps = [i["timestamp"] for i in body["items"]]
        assert stamps == sorted(stamps)

    gateway(scenario)


def test_query_filters(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        robot_logs(gw)
        status, body = await gw.json("GET", f"{LOGS}?severity=warning")
        assert status == 200 and severities(body) == ["warning", "error", "fatal"]
        status, body = await gw.json("GET", f"{API}/functions/chassis/logs?context=monitor")
        assert status == 200 and [i["message"] for i in body["items"]] == ["pressure low"]
        body = await gw.error("GET", f"{LOGS}?severity=warn", 400)
        assert body["error_code"] == "invalid-parameter"
        assert body["message"] == ("Invalid severity value: must be one of debug, info, "
                                   "warning, error, fatal")
        assert body["parameters"]["parameter"] == "severity"
        body = await gw.error("GET", f"{LOGS}?context={'x' * 257}", 400)
        assert body["error_code"] == "invalid-parameter"
        assert body["message"] == "context filter exceeds maximum length of 256"

    gateway(scenario)


def test_the_configuration_filters_and_limits(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        robot_logs(gw)
        status, body = await gw.json("GET", CFG)
        assert (status, body) == (200, DEFAULT)
        status, _ = await gw.json("PUT", CFG, json={"severity_filter": "warning"})
        assert status == 204
        status, body = await gw.json("GET", CFG)
        assert body == {"severity_filter": "warning", "max_entries": 100}
        status, body = await gw.json("GET", LOGS)
        assert severities(body) == ["warning", "error", "fatal"]
        # a query may raise the floor, never lower it
        status, body = await gw.json("GET", f"{LOGS}?severity=debug")
        assert severities(body) == ["warning", "error", "fatal"]
        status, _ = await gw.json("PUT", CFG, json={"max_entries": 1})
        assert status == 204
        status, body = await gw.json("GET", LOGS)
        assert severities(body) == ["fatal"]  # the newest
        status, _ = await gw.json("PUT", CFG, json={"severity_filter": "error",
                                                    "max_entries": 10000})
        assert status == 204
        status, body = await gw.json("GET", LOGS)
        assert severities(body) == ["error", "fatal"]
        status, _ = await gw.json("PUT", CFG, json={})  # both optional: changes nothing
        assert status == 204
        status, body = await gw.json("GET", CFG)
        assert body == {"severity_filter": "error", "max_entries": 10000}
        # the configuration is the entity's own
        status, body = await gw.json("GET", f"{API}/functions/chassis/logs/configuration")
        assert body == DEFAULT
        status, body = await gw.json("GET", f"{API}/functions/chassis/logs")
        assert "debug" in severities(body)

    gateway(scenario)


@pytest.mark.parametrize("bad", [
    {"max_entries": 0}, {"max_entries": 10001}, {"max_entries": -5}, {"max_entries": "10"},
    {"max_entries": 1.5}, {"max_entries": True}, {"severity_filter": "warn"},
    {"severity_filter": "ERROR"}, {"severity_filter": 40},
])
def test_configuration_limits(gateway: Runner, bad: dict[str, Any]) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("PUT", CFG, 400, json=bad)
        assert body["error_code"] == "invalid-parameter"
        field = next(iter(bad))
        assert body["parameters"]["field"] == field
        assert body["message"].startswith(f"'{field}' must be")
        status, body = await gw.json("GET", CFG)
        assert body == DEFAULT  # nothing changed

    gateway(scenario)


def test_configuration_body_errors(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        body = await gw.error("PUT", CFG, 400, json=[1])
        assert body["error_code"] == "invalid-request"
        body = await gw.error("PUT", CFG, 400, data=b"{nope",
                              headers={"Content-Type": "application/json"})
        assert body["error_code"] == "invalid-request"
        # a body naming no known field is refused (a typo must not pass as a no-op)
        for typo in ({"severity": "info"}, {"maxEntries": 5, "filter": "x"}):
            body = await gw.error("PUT", CFG, 400, json=typo)
            assert body["error_code"] == "invalid-request"
            assert "severity_filter" in body["message"] and "max_entries" in body["message"]
        # every bad field is named
        body = await gw.error("PUT", CFG, 400, json={"severity_filter": "x", "max_entries": 0})
        assert [f["field"] for f in body["parameters"]["fields"]] == ["severity_filter",
                                                                     "max_entries"]
        # a known field beside an unknown one is taken
        status, _ = await gw.json("PUT", CFG, json={"max_entries": 7, "x": 1})
        assert status == 204
        status, body = await gw.json("GET", CFG)
        assert body["max_entries"] == 7
        for method, path in (("GET", f"{API}/apps/ghost/logs"),
                             ("GET", f"{API}/apps/ghost/logs/configuration"),
                             ("PUT", f"{API}/apps/ghost/logs/configuration")):
            body = await gw.error(method, path, 404, json={})
            assert body["parameters"]["entity_id"] == "ghost"

    gateway(scenario)


def test_an_empty_configuration_body_and_the_context_filter(gateway: Runner) -> None:
    async def scenario(gw: Gw) -> None:
        robot_logs(gw)
        status, _ = await gw.json("PUT", CFG, data=b"",
                                  headers={"Content-Type": "application/json"})
        assert status == 204  # an empty body changes nothing
        status, body = await gw.json("GET", CFG)
        assert body == DEFAULT
        status, body = await gw.json("GET", f"{LOGS}?context=brakes/actuator")
        assert nodes(body) == {ACTUATOR}
        status, body = await gw.json("GET", f"{LOGS}?context=no_such_node")
        assert body["items"] == []
        status, body = await gw.json("GET", LOGS)
        entry = body["items"][-1]
        assert {"id", "timestamp", "severity", "message", "context"} <= set(entry)
        assert entry["context"]["node"] == ACTUATOR

    gateway(scenario)
