"""The debounce lifecycle of facts.md, with explicit times."""

from __future__ import annotations

import logging

import pytest

from gateway.faults.manager import DebounceConfig, apply, auto_confirm, clear
from gateway.faults.model import (
    CLEARED,
    CONFIRMED,
    CRITICAL,
    ERROR,
    FAILED,
    HEALED,
    INFO,
    PASSED,
    PREFAILED,
    PREPASSED,
    WARN,
    FaultRecord,
    Report,
    parse_status_filter,
    severity_label,
    status_flags,
)
from gateway.model.timestamps import iso

S = 1_000_000_000
DEFAULT = DebounceConfig()


def failed(code: str = "X", sev: int = ERROR, desc: str = "d", src: str = "/a") -> Report:
    return Report(code, FAILED, sev, desc, src)


def passed(code: str = "X", src: str = "/a") -> Report:
    return Report(code, PASSED, 0, "", src)


def run(reports: list[Report], cfg: DebounceConfig = DEFAULT) -> FaultRecord | None:
    fault = None
    for i, r in enumerate(reports):
        fault, _ = apply(fault, r, (i + 1) * S, cfg)
    return fault


def test_default_threshold_confirms_on_first_failed() -> None:
    fault, change = apply(None, failed(), 5 * S, DEFAULT)
    assert fault is not None and change is not None
    assert fault.status == CONFIRMED and fault.counter == -1
    assert fault.occurrence_count == 1 and fault.first_ns == fault.last_ns == 5 * S
    assert fault.confirmed_ns == 5 * S
    assert change.before is None and change.confirmed and change.onset


def test_passed_for_unknown_code_is_ignored() -> None:
    assert apply(None, passed(), S, DEFAULT) == (None, None)


def test_debounced_confirmation_needs_three_failures() -> None:
    cfg = DebounceConfig(confirmation_threshold=-3)
    f = run([failed()], cfg)
    assert f is not None and f.status == PREFAILED and f.counter == -1
    f = run([failed(), failed()], cfg)
    assert f is not None and f.status == PREFAILED
    f = run([failed(), failed(), failed()], cfg)
    assert f is not None and f.status == CONFIRMED and f.occurrence_count == 1


def test_prefailed_then_passes_becomes_prepassed() -> None:
    cfg = DebounceConfig(confirmation_threshold=-3)
    f = run([failed(), passed()], cfg)
    assert f is not None and f.counter == 0 and f.status == PREFAILED  # 0: unchanged
    f = run([failed(), passed(), passed()], cfg)
    assert f is not None and f.counter == 1 and f.status == PREPASSED
    assert f.last_passed_ns == 3 * S


def test_critical_confirms_at_once_unless_disabled() -> None:
    cfg = DebounceConfig(confirmation_threshold=-5)
    f = run([failed(sev=CRITICAL)], cfg)
    assert f is not None and f.status == CONFIRMED
    f = run([failed(sev=CRITICAL)], DebounceConfig(confirmation_threshold=-5,
                                                   critical_immediate_confirm=False))
    assert f is not None and f.status == PREFAILED
    # an existing PREFAILED fault confirms on its first CRITICAL report
    f = run([failed(sev=WARN), failed(sev=CRITICAL)], cfg)
    assert f is not None and f.status == CONFIRMED and f.severity == CRITICAL


def test_confirmed_is_latched_without_healing() -> None:
    f = run([failed(), passed(), passed(), passed(), passed(), passed()])
    assert f is not None and f.status == CONFIRMED
    assert f.counter == 4  # clamped into [confirmation, healing] before each step, then +1


def test_healing_after_threshold_passes() -> None:
    cfg = DebounceConfig(healing_enabled=True, healing_threshold=3)
    reports = [failed(), passed(), passed(), passed()]
    f = run(reports, cfg)
    assert f is not None and f.status == CONFIRMED and f.counter == 2
    fault, change = apply(f, passed(), 10 * S, cfg)
    assert fault is not None and change is not None
    assert fault.status == HEALED and change.cleared and fault.cleared_ns == 10 * S


def test_counter_clamped_so_confirmed_fault_heals_promptly() -> None:
    cfg = DebounceConfig(healing_enabled=True, healing_threshold=1)
    f = run([failed()] * 20 + [passed(), passed()], cfg)
    assert f is not None and f.status == HEALED


def test_healed_fault_is_latched_until_it_confirms_again() -> None:
    cfg = DebounceConfig(healing_enabled=True, healing_threshold=1)
    f = run([failed(), passed(), passed(), failed()], cfg)
    assert f is not None and f.status == HEALED and f.counter == 0
    fault, change = apply(f, failed(), 9 * S, cfg)
    assert fault is not None and fault.status == CONFIRMED and change is not None
    assert change.confirmed and fault.occurrence_count == 1


def test_failed_updates_sources_severity_description() -> None:
    f = run([failed(sev=WARN, desc="first", src="/a"), failed(sev=ERROR, desc="", src="/b"),
             failed(sev=INFO, desc="third", src="/a")])
    assert f is not None
    assert f.sources == ["/a", "/b"]
    assert f.severity == ERROR  # raised, never lowered
    assert f.description == "third"  # replaced when non-empty
    assert f.occurrence_count == 1  # does not grow while active
    assert f.first_ns == S and f.last_ns == 3 * S


def test_visible_change_flag() -> None:
    f = run([failed(src="/a")])
    _, change = apply(f, failed(src="/a"), 9 * S, DEFAULT)
    assert change is not None and not change.visible_change
    _, change = apply(f, failed(src="/b"), 9 * S, DEFAULT)
    assert change is not None and change.visible_change


def test_clear_and_reactivation() -> None:
    f = run([failed(sev=CRITICAL, desc="one")])
    assert f is not None
    change = clear(f, 5 * S)
    assert change is not None and f.status == CLEARED and f.cleared_ns == 5 * S
    assert clear(f, 6 * S) is None  # already cleared
    # PASSED on a cleared fault is ignored
    same, change = apply(f, passed(), 7 * S, DEFAULT)
    assert change is None and same is not None and same.status == CLEARED
    fault, change = apply(f, failed(sev=WARN, desc="two"), 8 * S, DEFAULT)
    assert fault is not None and change is not None
    assert change.reactivated and change.onset and change.confirmed
    assert fault.occurrence_count == 2 and fault.first_ns == fault.last_ns == 8 * S
    assert fault.status == CONFIRMED and fault.severity == WARN and fault.description == "two"


def test_reactivation_respects_debounce() -> None:
    cfg = DebounceConfig(confirmation_threshold=-2)
    f = run([failed(), failed()], cfg)
    assert f is not None and f.status == CONFIRMED
    clear(f, 5 * S)
    fault, change = apply(f, failed(), 6 * S, cfg)
    assert fault is not None and fault.status == PREFAILED and fault.counter == -1
    assert change is not None and change.reactivated and not change.confirmed


def test_auto_confirm_after_age() -> None:
    cfg = DebounceConfig(confirmation_threshold=-5, auto_confirm_after_sec=10)
    f = run([failed()], cfg)
    assert f is not None and f.status == PREFAILED
    assert auto_confirm(f, f.first_ns + 9 * S, cfg) is None
    change = auto_confirm(f, f.first_ns + 10 * S, cfg)
    assert change is not None and change.confirmed and f.status == CONFIRMED
    off = run([failed()], DebounceConfig(confirmation_threshold=-5))
    assert off is not None and auto_confirm(off, 10**12 * S, DebounceConfig(-5)) is None


@pytest.mark.parametrize(("conf", "heal"), [(0, 3), (-1, -1), (2, 5)])
def test_invalid_thresholds_reset_with_warning(conf: int, heal: int,
                                               caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        cfg = DebounceConfig(confirmation_threshold=conf, healing_threshold=heal).validated()
    assert (cfg.confirmation_threshold, cfg.healing_threshold) == (-1, 3)
    assert "faults.confirmation_threshold" in caplog.text


def test_status_table_and_labels() -> None:
    assert status_flags(CONFIRMED) == {"aggregatedStatus": "active", "testFailed": "1",
                                       "confirmedDTC": "1", "pendingDTC": "0"}
    assert status_flags(PREFAILED)["aggregatedStatus"] == "passive"
    assert status_flags(PREFAILED)["pendingDTC"] == "1"
    assert status_flags(PREPASSED)["testFailed"] == "0"
    assert status_flags(HEALED)["aggregatedStatus"] == "cleared"
    assert status_flags(CLEARED)["aggregatedStatus"] == "cleared"
    assert [severity_label(i) for i in range(4)] == ["INFO", "WARN", "ERROR", "CRITICAL"]


def test_status_filter() -> None:
    assert parse_status_filter(None) == {PREFAILED, CONFIRMED}
    assert parse_status_filter("confirmed") == {CONFIRMED}
    assert parse_status_filter("pending") == {PREFAILED, PREPASSED}
    assert parse_status_filter("cleared,healed") == {CLEARED, HEALED}
    assert len(parse_status_filter("all") or ()) == 5
    assert parse_status_filter("bogus") is None


def test_iso_has_milliseconds() -> None:
    assert iso(1_700_000_000_123_456_789) == "2023-11-14T22:13:20.123Z"


def test_record_round_trip() -> None:
    f = run([failed(src="/a"), failed(src="/b")])
    assert f is not None
    assert FaultRecord.from_dict(f.to_dict()) == f
