"""Pure logic of operations, configurations, logs and status: explicit inputs and `now`."""

from __future__ import annotations

import asyncio
import math

import pytest

from gateway.entities.status import readiness
from gateway.errors import ApiError
from gateway.logs.configs import DEFAULT_CONFIG, validate_config
from gateway.operations.handlers import request_timeout
from gateway.ros.calls.actions import execution_status, ros_status_name
from gateway.ros.calls.parameters import (
    NegativeCache,
    ValueNotConvertible,
    coerce,
    infer_type,
    to_msg,
    value_of,
)
from gateway.ros.calls.services import CallTimeout, InFlightLimiter
from gateway.ros.topics.rosout import (
    LogRecord,
    entry,
    iso_ns,
    logger_to_node,
    node_matches,
    select,
    severity_of,
)

# --- execution status ---------------------------------------------------------------------


@pytest.mark.parametrize(("ros", "sovd"), [
    (1, "running"), (2, "running"), (3, "running"), (0, "running"),
    (4, "completed"), (5, "failed"), (6, "failed"),
])
def test_execution_status_follows_the_spec_table(ros: int, sovd: str) -> None:
    assert execution_status(ros) == sovd


def test_rejected_goal_is_failed() -> None:
    assert execution_status(1, rejected=True) == "failed"
    assert ros_status_name(1, rejected=True) == "REJECTED"
    assert ros_status_name(3) == "CANCELING"
    assert ros_status_name(42) == "42"


# --- execution request bodies ---------------------------------------------------------------


def test_request_timeout() -> None:
    assert request_timeout({}, 10.0) == 10.0
    assert request_timeout({"timeout": 2}, 10.0) == 2.0
    for bad in (0, -1, "3", True, math.inf, 1e9):
        with pytest.raises(ApiError) as err:
            request_timeout({"timeout": bad}, 10.0)
        assert err.value.status == 400 and err.value.error_code == "invalid-parameter"


# --- parameter values ----------------------------------------------------------------------


@pytest.mark.parametrize(("code", "value", "out"), [
    (3, 80, 80.0), (3, "12.5", 12.5), (3, 1.5, 1.5),
    (2, 7, 7), (2, 7.0, 7), (2, "42", 42),
    (1, True, True), (1, "false", False),
    (4, "x", "x"), (4, 5, "5"), (4, True, "true"),
    (8, [1, 2.5], [1.0, 2.5]), (7, [1, "2"], [1, 2]), (5, [0, 255], [0, 255]),
    (9, ["a", 1], ["a", "1"]), (6, [True], [True]),
    (0, 3, 3), (0, "s", "s"),
])
def test_coerce_converts_to_the_parameter_type(code: int, value: object, out: object) -> None:
    assert coerce(code, value) == out
    assert type(coerce(code, value)) is type(out)


@pytest.mark.parametrize(("code", "value"), [
    (3, "abc"), (3, True), (3, None), (3, [1]),
    (2, 1.5), (2, True), (2, "x"), (2, 1 << 63),
    (1, 1), (1, "yes"), (4, {"a": 1}), (4, None),
    (8, 1.0), (8, [1, "x"]), (5, [256]), (5, [-1]),
])
def test_coerce_refuses_what_does_not_convert(code: int, value: object) -> None:
    with pytest.raises(ValueNotConvertible):
        coerce(code, value)


def test_array_errors_name_the_element() -> None:
    with pytest.raises(ValueNotConvertible, match=r"element \[1\]"):
        coerce(8, [1.0, "x"])


def test_infer_type() -> None:
    assert [infer_type(v) for v in (True, 1, 1.0, "s", [1], [1.0], ["a"], [True], [])] == [
        1, 2, 3, 4, 7, 8, 9, 6, 9]
    with pytest.raises(ValueNotConvertible):
        infer_type({"a": 1})


@pytest.mark.parametrize(("code", "value"), [
    (1, True), (2, -5), (3, 2.5), (4, "hi"), (5, [0, 7, 255]), (6, [True, False]),
    (7, [1, 2]), (8, [0.5]), (9, ["a", "b"]),
])
def test_parameter_value_round_trip(code: int, value: object) -> None:
    assert value_of(to_msg(code, value)) == (code, value)


def test_not_set_value() -> None:
    from rcl_interfaces.msg import ParameterValue

    assert value_of(ParameterValue()) == (0, None)


# --- negative cache ------------------------------------------------------------------------


def test_negative_cache_expires() -> None:
    cache = NegativeCache(60.0)
    assert cache.remaining("/n", now=100.0) == 0.0
    cache.mark("/n", now=100.0)
    assert cache.remaining("/n", now=100.0) == 60.0
    assert cache.remaining("/n", now=159.5) == pytest.approx(0.5)
    assert cache.remaining("/other", now=120.0) == 0.0
    assert cache.remaining("/n", now=160.0) == 0.0
    assert cache.remaining("/n", now=161.0) == 0.0  # gone, not re-armed


def test_negative_cache_clear_and_disabled() -> None:
    cache = NegativeCache(60.0)
    cache.mark("/n", now=0.0)
    cache.clear("/n")
    assert cache.remaining("/n", now=1.0) == 0.0
    off = NegativeCache(0.0)
    off.mark("/n", now=0.0)
    assert off.remaining("/n", now=0.0) == 0.0


# --- logs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("level", "severity"), [
    (10, "debug"), (20, "info"), (30, "warning"), (40, "error"), (50, "fatal"),
    (0, "debug"), (25, "info"), (99, "fatal"),
])
def test_severity_of_middleware_levels(level: int, severity: str) -> None:
    assert severity_of(level) == severity


def test_logger_name_resolves_against_the_graph() -> None:
    nodes = frozenset({"/a", "/a/b", "/perception/lidar/lidar_sensor", "/x"})
    # node b in namespace /a exists: it wins over the child logger b of node /a
    assert logger_to_node("a.b", nodes) == "/a/b"
    assert logger_to_node("a.c", nodes) == "/a"  # child logger of /a
    assert logger_to_node("perception.lidar.lidar_sensor", nodes) == \
        "/perception/lidar/lidar_sensor"
    assert logger_to_node("perception.lidar.lidar_sensor.sub", nodes) == \
        "/perception/lidar/lidar_sensor"
    # nothing on the graph: the slash form
    assert logger_to_node("gone.node", nodes) == "/gone/node"
    # a namespaced node is not collapsed onto a node named like its namespace
    assert logger_to_node("x.y.z", frozenset({"/x", "/x/y/z"})) == "/x/y/z"


def test_node_matches_exact_and_prefix() -> None:
    assert node_matches("/a/b", ["/a/b"], prefix=False)
    assert not node_matches("/a/b/c", ["/a/b"], prefix=False)
    assert node_matches("/a/b/c", ["/a/b"], prefix=True)
    assert not node_matches("/a/bc", ["/a/b"], prefix=True)
    assert not node_matches("/a/b", [], prefix=True)


def _rec(seq: int, level: int, logger: str, stamp: int) -> LogRecord:
    return LogRecord(seq, stamp, level, logger, f"m{seq}")


def test_select_filters_limits_and_orders() -> None:
    records = [_rec(1, 20, "a", 30), _rec(2, 40, "a", 10), _rec(3, 30, "b", 20),
               _rec(4, 10, "a", 40), _rec(5, 50, "a", 50)]
    nodes = {"a": "/ns/a", "b": "/ns/b"}
    got = select(records, nodes, ["/ns/a"], False, "debug", 100)
    assert [r.seq for r in got] == [2, 1, 4, 5]  # oldest first by stamp
    got = select(records, nodes, ["/ns/a"], False, "info", 100)
    assert [r.seq for r in got] == [2, 1, 5]
    got = select(records, nodes, ["/ns/a", "/ns/b"], False, "warning", 2)
    assert [r.seq for r in got] == [3, 5]  # newest two
    assert select(records, nodes, ["/ns"], True, "debug", 10) == \
        select(records, nodes, ["/ns/a", "/ns/b"], False, "debug", 10)
    assert select(records, nodes, ["/ns"], False, "debug", 10) == []


def test_entry_shape() -> None:
    record = LogRecord(7, 1_700_000_000_123_456_789, 30, "a.b", "hot", "f.py", "tick", 12)
    assert entry(record, "/a/b") == {
        "id": "7", "timestamp": "2023-11-14T22:13:20.123456789Z", "severity": "warning",
        "message": "hot",
        "context": {"node": "/a/b", "function": "tick", "file": "f.py", "line": 12}}
    bare = LogRecord(8, 0, 20, "a", "x")
    assert entry(bare, "/a")["context"] == {"node": "/a"}
    assert iso_ns(5) == "1970-01-01T00:00:00.000000005Z"


def test_log_configuration_validation() -> None:
    assert validate_config({}, DEFAULT_CONFIG) == {"severity_filter": "debug",
                                                   "max_entries": 100}
    assert validate_config({"severity_filter": "error"}, DEFAULT_CONFIG)["severity_filter"] == \
        "error"
    assert validate_config({"max_entries": 10000}, DEFAULT_CONFIG)["max_entries"] == 10000
    assert validate_config({"max_entries": 1}, DEFAULT_CONFIG)["max_entries"] == 1
    # JSON Schema (the published contract): 2.0 is the integer 2
    assert validate_config({"max_entries": 2.0}, DEFAULT_CONFIG)["max_entries"] == 2
    for body in ({"max_entries": 0}, {"max_entries": 10001}, {"max_entries": "5"},
                 {"max_entries": True}, {"max_entries": 2.5}, {"severity_filter": "warn"},
                 {"severity_filter": None}, [1]):
        with pytest.raises(ApiError) as err:
            validate_config(body, DEFAULT_CONFIG)
        assert err.value.status == 400
    assert DEFAULT_CONFIG == {"severity_filter": "debug", "max_entries": 100}


# --- status --------------------------------------------------------------------------------


def test_readiness() -> None:
    assert readiness(True, None) == "ready"
    assert readiness(True, 3) == "ready"
    assert readiness(True, 2) == "notReady"  # inactive lifecycle node
    assert readiness(True, -1) == "notReady"  # lifecycle state unknown
    assert readiness(False, None) == "notReady"


# --- in-flight cap -------------------------------------------------------------------------


def test_in_flight_cap_queues_callers_within_their_own_budget() -> None:
    async def scenario() -> tuple[int, list[str]]:
        limiter = InFlightLimiter(8)
        release = asyncio.Event()
        peak = 0

        async def caller(budget: float) -> str:
            nonlocal peak
            try:
                async with limiter.slot("/svc", budget):
                    peak = max(peak, limiter.in_flight["/svc"])
                    await release.wait()
                    return "served"
            except CallTimeout:
                return "timeout"

        tasks = [asyncio.ensure_future(caller(5.0)) for _ in range(8)]
        tasks += [asyncio.ensure_future(caller(0.05)) for _ in range(4)]  # give up queued
        tasks += [asyncio.ensure_future(caller(5.0)) for _ in range(4)]  # wait their turn
        await asyncio.sleep(0.2)
        release.set()
        outcomes = await asyncio.gather(*tasks)
        assert limiter.in_flight["/svc"] == 0
        return peak, outcomes

    peak, outcomes = asyncio.run(scenario())
    assert peak == 8
    assert outcomes == ["served"] * 8 + ["timeout"] * 4 + ["served"] * 4


# --- the /rosout ring buffers ----------------------------------------------------------------


def _log_msg(name: str, level: int, text: str, sec: int) -> object:
    from types import SimpleNamespace

    return SimpleNamespace(stamp=SimpleNamespace(sec=sec, nanosec=5), level=level, name=name,
                           msg=text, file="f.py", function="fn", line=3)


def test_rosout_ring_buffer_per_logger(monkeypatch: pytest.MonkeyPatch) -> None:
    from gateway.ros.topics import rosout

    log = rosout.RosoutLog(bridge=None, buffer_size=3)  # type: ignore[arg-type]
    for k in range(5):
        log._on_log(_log_msg("a.node", 20, f"a{k}", k))
    log._on_log(_log_msg("b", 40, "b0", 9))
    loggers, records = log.snapshot()
    assert loggers == ["a.node", "b"]
    assert [r.message for r in records if r.logger == "a.node"] == ["a2", "a3", "a4"]
    assert records[-1].stamp_ns == 9_000_000_005 and records[-1].level == 40
    added = log.add("b", 50, "marker", 10)
    assert added.seq > records[-1].seq
    # past the logger cap, the logger with the oldest newest record goes
    monkeypatch.setattr(rosout, "MAX_LOGGERS", 2)
    log._on_log(_log_msg("c", 20, "c0", 11))
    assert log.snapshot()[0] == ["b", "c"]


def test_acquire_within_never_leaks_a_permit() -> None:
    from gateway.ros.calls.services import acquire_within

    async def scenario() -> list[object]:
        sem = asyncio.Semaphore(1)
        assert await acquire_within(sem, 1.0)  # free: immediate
        timed_out = await acquire_within(sem, 0.01)
        waiter = asyncio.ensure_future(acquire_within(sem, 5.0))
        await asyncio.sleep(0.01)
        waiter.cancel()  # the caller goes away while queued
        await asyncio.gather(waiter, return_exceptions=True)
        sem.release()
        await asyncio.sleep(0)
        # exactly one permit is back: one acquire succeeds, the next one waits
        first = await acquire_within(sem, 0.01)
        second = await acquire_within(sem, 0.01)
        return [timed_out, waiter.cancelled(), first, second]

    assert asyncio.run(scenario()) == [False, True, True, False]
