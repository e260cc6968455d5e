"""Forwarded push requests: a renamed peer app's resource URIs go out in the peer's ids."""

from __future__ import annotations

from gateway.federation.forward import Target, _to_peer_ids


def test_resource_uris_of_a_renamed_app_use_the_peer_id() -> None:
    body = (b'{"resource": "/api/v1/apps/robot__temp_sensor/data/powertrain/engine/temperature",'
            b' "interval": "fast"}')
    renamed = Target("robot", "/apps/temp_sensor/cyclic-subscriptions",
                     ("apps", "temp_sensor", "robot__temp_sensor"))
    assert _to_peer_ids(body, renamed) == body.replace(b"robot__temp_sensor", b"temp_sensor")
    same = Target("robot", "/apps/lidar/triggers", ("apps", "lidar", "lidar"))
    assert _to_peer_ids(body, same) == body
    assert _to_peer_ids(body, Target("robot", "/x", None)) == body
