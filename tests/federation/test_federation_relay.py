"""Fault stream relay helpers (gateway/federation/relay.py): SSE frame parsing and peer tagging."""

from __future__ import annotations

from gateway.federation.relay import parse_frames, tag


def test_frames_are_taken_whole_and_comments_skipped() -> None:
    buf = bytearray(b":connected\n\nid: 4\nevent: fault_confirmed\ndata: {\"a\": 1}\n\n"
                    b":keepalive\n\nid: 5\nevent: fault_cleared\ndata: {\"b\"")
    assert list(parse_frames(buf)) == [("fault_confirmed", '{"a": 1}')]
    assert bytes(buf) == b'id: 5\nevent: fault_cleared\ndata: {"b"'
    buf.extend(b": 2}\n\n")
    assert list(parse_frames(buf)) == [("fault_cleared", '{"b": 2}')]
    assert buf == bytearray()


def test_multiline_data_and_default_event() -> None:
    buf = bytearray(b"data: line1\ndata: line2\n\n")
    assert list(parse_frames(buf)) == [("message", "line1\nline2")]


def test_events_are_tagged_with_the_peer_and_fleet_ids() -> None:
    def rename(gateway: str, app_id: str) -> str:
        return f"{gateway}__{app_id}" if app_id == "temp_sensor" else app_id

    data = {"event_type": "fault_confirmed", "fault": {"fault_code": "F"},
            "x-vendor": {"entity_type": "apps", "entity_id": "temp_sensor"}}
    out = tag(data, "robot1", "x-vendor", rename)
    assert out["x-vendor"] == {"entity_type": "apps", "entity_id": "robot1__temp_sensor",
                               "peer": "robot1"}
    assert data["x-vendor"]["entity_id"] == "temp_sensor"  # the input is not changed
    assert tag({"fault": {}}, "r", "x-vendor", rename)["x-vendor"] == {"peer": "r"}
    spec = {"x-vendor": {"entity_type": "app", "entity_id": "temp_sensor"}}  # the spec's word
    assert tag(spec, "robot1", "x-vendor", rename)["x-vendor"]["entity_id"] == \
        "robot1__temp_sensor"
    other = {"x-vendor": {"entity_type": "component", "entity_id": "temp_sensor"}}
    assert tag(other, "robot1", "x-vendor", rename)["x-vendor"]["entity_id"] == "temp_sensor"


def test_an_event_through_a_site_keeps_the_robot_that_raised_it() -> None:
    def rename(gateway: str, app_id: str) -> str:
        return app_id

    at_site = tag({"fault": {}}, "r1", "x-vendor", rename)
    at_fleet = tag(at_site, "site1", "x-vendor", rename)
    assert at_fleet["x-vendor"] == {"peer": "site1", "peer_path": ["site1", "r1"]}
    at_top = tag(at_fleet, "region", "x-vendor", rename)
    assert at_top["x-vendor"]["peer_path"] == ["region", "site1", "r1"]
