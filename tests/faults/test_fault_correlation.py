"""Correlation rules: hierarchical muting and auto-clear, auto-clusters, persistence."""

from __future__ import annotations

import pytest

from gateway.faults.correlation import (
    CorrelationConfigError,
    CorrelationEngine,
    parse_config,
)
from gateway.model.timestamps import iso

MS = 1_000_000
RULES = {
    "correlation": {
        "enabled": True,
        "default_window_ms": 500,
        "patterns": {
            "motor_errors": {"codes": ["MOTOR_*"]},
            "drive": ["DRIVE_FAULT", "WHEEL_*"],
            "comm": ["COMM_*"],
        },
        "rules": [
            {"id": "estop", "name": "E-stop cascade", "mode": "hierarchical",
             "root_cause": {"codes": ["ESTOP"]},
             "symptoms": [{"pattern": "motor_errors"}, {"pattern": "drive"}],
             "window_ms": 2000},
            {"id": "storm", "name": "Comm storm", "mode": "auto_cluster",
             "match": [{"pattern": "comm"}], "min_count": 3, "window_ms": 1000,
             "representative": "highest_severity"},
        ],
    }
}


def engine() -> CorrelationEngine:
    return CorrelationEngine(parse_config(RULES))


def test_parse_rules_and_defaults() -> None:
    cfg = parse_config(RULES)
    assert cfg.enabled and cfg.default_window_ms == 500
    estop, storm = cfg.rules
    assert estop.mode == "hierarchical" and estop.mute_symptoms and estop.auto_clear_with_root
    assert estop.symptoms.matches("MOTOR_LEFT") and estop.symptoms.matches("WHEEL_SLIP")
    assert not estop.symptoms.matches("ESTOP")
    assert storm.min_count == 3 and storm.show_as_single
    assert parse_config({"rules": [{"id": "r", "mode": "auto_cluster", "match": ["A_*"]}]}
                        ).rules[0].window_ms == 500


@pytest.mark.parametrize("bad", [
    {"rules": [{"id": "r", "mode": "sideways"}]},
    {"rules": [{"id": "r", "mode": "hierarchical", "root_cause": {"codes": ["A"]}}]},
    {"rules": [{"id": "r", "mode": "auto_cluster", "match": [{"pattern": "nope"}]}]},
    {"rules": [{"id": "r", "mode": "auto_cluster", "match": ["A"], "representative": "x"}]},
])
def test_bad_rules_are_refused(bad: dict) -> None:
    with pytest.raises(CorrelationConfigError):
        parse_config(bad)


def test_symptom_within_window_is_muted() -> None:
    e = engine()
    assert e.on_onset("ESTOP", 3, 1000 * MS).muted is None
    d = e.on_onset("MOTOR_LEFT", 2, 1250 * MS)
    assert d.muted is not None
    assert e.muted_faults() == [{"fault_code": "MOTOR_LEFT", "root_cause_code": "ESTOP",
                                 "rule_id": "estop", "delay_ms": 250}]
    assert e.hidden() == {"MOTOR_LEFT"} and e.is_muted("MOTOR_LEFT")


def test_symptom_outside_window_or_before_root_is_not_muted() -> None:
    e = engine()
    assert e.on_onset("MOTOR_LEFT", 2, 0).muted is None  # before the root cause
    e.on_onset("ESTOP", 3, 1000 * MS)
    assert e.on_onset("WHEEL_SLIP", 2, 3001 * MS).muted is None  # window 2000 ms passed
    assert e.muted_faults() == []


def test_clearing_root_returns_symptoms_to_clear() -> None:
    e = engine()
    e.on_onset("ESTOP", 3, 0)
    e.on_onset("MOTOR_LEFT", 2, 10 * MS)
    e.on_onset("DRIVE_FAULT", 2, 20 * MS)
    auto = e.on_clear("ESTOP")
    assert sorted(auto) == ["DRIVE_FAULT", "MOTOR_LEFT"]
    for code in auto:
        assert e.on_clear(code) == []
    assert e.muted_faults() == [] and e.hidden() == set()


def test_clear_within_scope_leaves_other_symptoms_unmuted() -> None:
    e = engine()
    e.on_onset("ESTOP", 3, 0)
    e.on_onset("MOTOR_LEFT", 2, 10 * MS)
    e.on_onset("DRIVE_FAULT", 2, 20 * MS)
    assert e.on_clear("ESTOP", in_scope={"ESTOP", "MOTOR_LEFT"}) == ["MOTOR_LEFT"]
    assert not e.is_muted("DRIVE_FAULT")  # its root is gone: it shows again


def test_no_auto_clear_unmutes_symptoms() -> None:
    cfg = {"rules": [{"id": "h", "mode": "hierarchical", "root_cause": {"codes": ["R"]},
                      "symptoms": ["S_*"], "auto_clear_with_root": False}]}
    e = CorrelationEngine(parse_config(cfg))
    e.on_onset("R", 2, 0)
    assert e.on_onset("S_1", 2, 100 * MS).muted is not None
    assert e.on_clear("R") == []
    assert not e.is_muted("S_1")


def test_unmuted_symptoms_still_auto_clear() -> None:
    cfg = {"rules": [{"id": "h", "mode": "hierarchical", "root_cause": {"codes": ["R"]},
                      "symptoms": ["S_*"], "mute_symptoms": False}]}
    e = CorrelationEngine(parse_config(cfg))
    e.on_onset("R", 2, 0)
    assert e.on_onset("S_1", 2, 100 * MS).muted is None
    assert e.on_clear("R") == ["S_1"]


def test_cluster_activates_at_min_count() -> None:
    e = engine()
    e.on_onset("COMM_A", 1, 0)
    e.on_onset("COMM_B", 2, 100 * MS)
    assert e.cluster_count() == 0 and e.hidden() == set()
    e.on_onset("COMM_C", 1, 200 * MS)
    assert e.cluster_count() == 1
    (item,) = e.cluster_items(iso)
    assert item["rule_id"] == "storm" and item["rule_name"] == "Comm storm"
    assert item["fault_codes"] == ["COMM_A", "COMM_B", "COMM_C"]
    assert item["representative_code"] == "COMM_B" and item["representative_severity"] == 2
    assert item["first_at"] == iso(0) and item["last_at"] == iso(200 * MS)
    assert e.hidden() == {"COMM_A", "COMM_C"}


@pytest.mark.parametrize(("rep", "expected"), [("first", "A1"), ("most_recent", "A3"),
                                               ("highest_severity", "A2")])
def test_representatives(rep: str, expected: str) -> None:
    cfg = {"rules": [{"id": "c", "mode": "auto_cluster", "match": ["A*"], "min_count": 3,
                      "window_ms": 1000, "representative": rep}]}
    e = CorrelationEngine(parse_config(cfg))
    for i, sev in enumerate((1, 3, 2)):
        e.on_onset(f"A{i + 1}", sev, i * MS)
    assert e.cluster_items(iso)[0]["representative_code"] == expected


def test_matches_outside_window_start_a_new_cluster() -> None:
    e = engine()
    e.on_onset("COMM_A", 1, 0)
    e.on_onset("COMM_B", 1, 100 * MS)
    e.on_onset("COMM_C", 1, 1500 * MS)  # the first window (1000 ms) has passed
    assert e.cluster_count() == 0
    e.on_onset("COMM_D", 1, 1600 * MS)
    e.on_onset("COMM_E", 1, 1700 * MS)
    assert e.cluster_count() == 1
    assert e.cluster_items(iso)[0]["fault_codes"] == ["COMM_C", "COMM_D", "COMM_E"]


def test_cleared_members_leave_the_cluster() -> None:
    e = engine()
    for i, code in enumerate(("COMM_A", "COMM_B", "COMM_C")):
        e.on_onset(code, 1, i * MS)
    e.on_clear("COMM_A")
    assert e.cluster_count() == 0  # below min_count again


def test_state_round_trip() -> None:
    e = engine()
    e.on_onset("ESTOP", 3, 0)
    e.on_onset("MOTOR_LEFT", 2, 10 * MS)
    for i, code in enumerate(("COMM_A", "COMM_B", "COMM_C")):
        e.on_onset(code, 1, i * MS)
    again = engine()
    again.load_state(e.to_state())
    assert again.muted_faults() == e.muted_faults()
    assert again.cluster_items(iso) == e.cluster_items(iso)
    assert again.on_clear("ESTOP") == ["MOTOR_LEFT"]


def test_disabled_config_has_no_rules() -> None:
    cfg = dict(RULES["correlation"], enabled=False)
    e = CorrelationEngine(parse_config(cfg))
    assert not e.enabled
    e.on_onset("ESTOP", 3, 0)
    assert e.on_onset("MOTOR_X", 2, MS).muted is None
