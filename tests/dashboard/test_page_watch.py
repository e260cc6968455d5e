"""The page stream's watch list and frames (gateway/dashboard/page_watch.py)."""

from __future__ import annotations

import json

import pytest

from gateway.dashboard.page_watch import (
    MAX_WATCHES,
    ended_frame,
    parse_watch,
    tag_frame,
    watching_frame,
)
from gateway.errors import ApiError, not_found

TOPIC = "/api/v1/apps/temp_sensor/data/powertrain/engine/temperature"


def test_watches_keep_their_order_and_entity() -> None:
    got = parse_watch({"faults": "1"}, [TOPIC, "/api/v1/functions/f/x-vendor-graph"])
    assert got.faults
    assert [(w.index, w.entity_type, w.entity_id) for w in got.watches] == [
        (0, "apps", "temp_sensor"), (1, "functions", "f")]


@pytest.mark.parametrize(("query", "watches", "needle"), [
    ({"faults": "yes"}, [], "'faults'"),
    ({}, [], "something to follow"),
    ({}, ["temp"], "not a resource of an entity"),
    ({}, ["/api/v1/robots/x/data"], "not a resource of an entity"),
    ({}, ["/api/v1/apps/x"], "not a resource of an entity"),
    ({}, [TOPIC] * (MAX_WATCHES + 1), f"at most {MAX_WATCHES}"),
    ({}, ["/api/v1/apps/x/data/" + "t" * 2000], "at most 1024 characters"),
])
def test_bad_queries_are_400_naming_the_parameter(query: dict[str, str], watches: list[str],
                                                  needle: str) -> None:
    with pytest.raises(ApiError) as err:
        parse_watch(query, watches)
    assert err.value.status == 400 and needle in err.value.message


def test_frames_are_tagged_with_their_watch() -> None:
    raw = b'data: {"timestamp":"t","payload":{"id":"x","data":1}}\n\n'
    out = tag_frame(3, raw)
    assert out is not None and out.startswith(b"event: sample\ndata: ")
    assert json.loads(out[len(b"event: sample\ndata: "):-2]) == {
        "watch": 3, "frame": {"timestamp": "t", "payload": {"id": "x", "data": 1}}}
    err = tag_frame(1, b'event: error\ndata: {"error_code":"internal-error"}\n\n')
    assert err == b'event: watch-error\ndata: {"watch":1,"error":{"error_code":"internal-error"}}\n\n'
    assert tag_frame(0, b":keepalive\n\n") is None
    assert ended_frame(2, False) == b'event: watch-end\ndata: {"watch":2,"renewed":false}\n\n'


def test_watching_frame_names_accepted_and_refused() -> None:
    raw = watching_frame({0: TOPIC}, {1: not_found("apps 'x' not found")}, True, "acme")
    body = json.loads(raw.split(b"data: ", 1)[1])
    assert body["faults"] is True
    assert body["accepted"] == [{"watch": 0, "resource": TOPIC}]
    assert body["refused"][0]["watch"] == 1 and body["refused"][0]["status"] == 404
