"""Aggregation settings: budgets, clamping with warnings, static peers
(gateway/federation/settings.py)."""

from __future__ import annotations

import pytest

from gateway.federation.settings import (
    Budgets,
    FederationSettings,
    StaticPeer,
    budgets,
    peer_name,
    service_type,
    static_peers,
)
from gateway.settings import config
from gateway.settings.config import ConfigError


def test_defaults_match_the_spec_table() -> None:
    s = config.load()
    assert s["aggregation.enabled"] is False
    assert (s["aggregation.timeout_ms"], s["aggregation.forward_timeout_ms"],
            s["aggregation.write_timeout_ms"]) == (2000, 15000, 5000)
    assert s["aggregation.peer_urls"] == () and s["aggregation.peer_names"] == ()
    assert s["aggregation.announce"] is False and s["aggregation.discover"] is False
    assert s["aggregation.max_discovered_peers"] == 50
    fs = FederationSettings.from_settings(s)
    assert fs.budgets == Budgets(2.0, 15.0, 5.0)
    assert fs.budgets.health_s == 1.0  # health checks cap both budgets at 1000 ms
    assert fs.mdns.interfaces == ("127.0.0.1",)


@pytest.mark.parametrize(("key", "value", "clamped"), [
    ("aggregation.timeout_ms", 5, 100),
    ("aggregation.timeout_ms", 10_000_000, 600000),
    ("aggregation.forward_timeout_ms", 0, 100),
    ("aggregation.write_timeout_ms", 700000, 600000),
    ("aggregation.max_discovered_peers", 0, 1),
    ("aggregation.max_discovered_peers", 5000, 1000),
])
def test_out_of_range_budgets_are_clamped_and_logged(key: str, value: int, clamped: int) -> None:
    s = config.load(None, [f"{key}={value}"])
    assert s[key] == clamped
    assert any(f"'{key}'" in w for w in s.warnings)


def test_forward_budget_is_raised_to_the_timeout() -> None:
    warnings: list[str] = []
    b = budgets(3000, 1000, 5000, warnings)
    assert b.forward_s == 3.0 and b.timeout_s == 3.0
    assert warnings and "'aggregation.forward_timeout_ms'" in warnings[0]
    s = config.load(None, ["aggregation.timeout_ms=4000", "aggregation.forward_timeout_ms=200"])
    fs = FederationSettings.from_settings(s)
    assert fs.budgets.forward_s == 4.0 and fs.warnings
    # a short timeout also shortens the health check budget
    assert budgets(300, 15000, 5000).health_s == 0.3


def test_static_peers_are_parallel_lists() -> None:
    assert static_peers(("http://a:1/", "", "http://b:2"), ("a", "", "b")) == [
        StaticPeer("a", "http://a:1"), StaticPeer("b", "http://b:2")]
    assert static_peers(("http://h:8081",), ("",)) == [StaticPeer("h_8081", "http://h:8081")]
    with pytest.raises(ConfigError, match="equal lengths"):
        static_peers(("http://a:1",), ())
    with pytest.raises(ConfigError, match="not unique"):
        static_peers(("http://a:1", "http://b:2"), ("x", "x"))
    with pytest.raises(ConfigError, match="'aggregation.peer_names'"):
        static_peers(("http://a:1",), ("bad name",))
    with pytest.raises(ConfigError, match="reserved"):
        static_peers(("http://a:1",), ("local",))
    with pytest.raises(ConfigError, match="no URL"):
        static_peers(("",), ("a",))


def test_names_and_service_types() -> None:
    assert peer_name("robot 1.local") == "robot_1_local"
    assert service_type("_diag-gateway._tcp") == "_diag-gateway._tcp.local."
    assert service_type("_x._tcp.local") == "_x._tcp.local."
    s = config.load(None, ["aggregation.mdns_name=robot-7", "aggregation.announce=true"])
    fs = FederationSettings.from_settings(s)
    assert fs.self_name == "robot-7" and fs.mdns.announce and fs.mdns.name == "robot-7"


def test_the_example_primary_config_loads() -> None:
    from pathlib import Path

    from gateway.federation.peer_auth import check_settings

    s = config.load(Path(__file__).resolve().parents[2] / "deploy" / "primary.yaml")
    check_settings(s)
    fs = FederationSettings.from_settings(s)
    assert fs.enabled and fs.mdns.discover and [p.name for p in fs.peers] == ["robot1", "robot2"]
    assert not s.warnings
