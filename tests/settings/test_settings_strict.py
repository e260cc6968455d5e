"""Strict settings: every key declared, unknown ones refused with a suggestion, unbuilt features named."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway import cli
from gateway.settings import config, settings_unbuilt


def refusal(*overrides: str) -> str:
    with pytest.raises(config.ConfigError) as info:
        config.load(None, list(overrides))
    return str(info.value)


def test_a_misspelt_key_is_refused_naming_the_closest_setting() -> None:
    assert "did you mean 'auth.enabled'" in refusal("auth.enabeld=true")
    assert "did you mean 'aggregation.timeout_ms'" in refusal("aggregation.timeout_msec=5")
    assert "did you mean 'snapshots.rosbag.enabled'" in refusal("snapshots.rosbag.enable=true")
    assert "'recorder.whatever'" in refusal("recorder.whatever=1")


def test_a_misspelt_key_in_a_yaml_file_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "gw.yaml"
    f.write_text("auth:\n  enabeld: true\n")
    with pytest.raises(config.ConfigError, match="did you mean 'auth.enabled'"):
        config.load(f)


@pytest.mark.parametrize(("key", "feature"), [
    ("locking.enabled", "locks"),
    ("locking.defaults.apps.lock_required_scopes", "locks"),
    ("scripts.scripts_dir", "scripts"),
    ("triggers.max_triggers", "triggers"),
    ("fault_triggers.poll_interval_ms", "fault-triggers"),
    ("updates.anything", "updates"),
    ("plugins", "plugins"),
    ("plugins.graph.path", "plugins"),
    ("discovery.manifest.fragments_dir", "manifest"),
    ("discovery.merge_pipeline.layers.runtime.status", "manifest"),
    ("entity_freeze_frame.enabled", "entity-freeze-frame"),
])
def test_settings_of_absent_features_are_refused_with_that_reason(key: str, feature: str) -> None:
    if feature in settings_unbuilt.built_features(config.BY_KEY):
        pytest.skip(f"{feature} declares settings: the feature is built")
    message = refusal(f"{key}=1")
    assert "feature not in this build" in message and f"'{feature}'" in message


def test_a_declared_setting_wins_over_the_unbuilt_table() -> None:
    declared = ["locking.enabled", "server.port"]
    assert settings_unbuilt.unbuilt_feature("locking.enabled", ["server.port"]) == "locks"
    assert settings_unbuilt.unbuilt_feature("locking.enabled", declared) is None
    # Once a feature declares any key, its other keys are ordinary unknown settings.
    assert settings_unbuilt.unbuilt_feature("locking.cleanup_interval", declared) is None
    assert settings_unbuilt.unbuilt_feature("scripts.scripts_dir", declared) == "scripts"


def test_keys_of_built_features_are_checked_like_any_other() -> None:
    assert "did you mean 'locking.enabled'" in refusal("locking.enabeld=true")
    assert "feature not in this build" not in refusal("triggers.max_trigger=5")
    s = config.load(None, ["plugins.graph_provider.window_sec=5",
                           "discovery.merge_pipeline.layers.runtime.status=prefer"])
    assert s.section("plugins.graph_provider.") == {"window_sec": 5}


def test_open_map_keys_stay_allowed() -> None:
    s = config.load(None, ["faults.diagnostics_bridge.code_map.Motor=MOTOR_FAULT",
                           "snapshots.default_topics=[/a, /b]"])
    assert s.section("faults.diagnostics_bridge.code_map.") == {"Motor": "MOTOR_FAULT"}
    assert s["snapshots.default_topics"] == ("/a", "/b")


def test_every_setting_has_type_range_and_meaning() -> None:
    for s in config.SETTINGS:
        assert s.help and s.type in (bool, int, float, str, tuple), s.key
        assert isinstance(s.default, s.type), s.key
        if s.type in (int, float):
            assert s.minimum is not None and s.maximum is not None, s.key
            assert s.minimum <= s.default <= s.maximum, s.key


def test_fault_thresholds_out_of_range_are_refused() -> None:
    assert "'faults.confirmation_threshold'" in refusal("faults.confirmation_threshold=2")
    assert "'faults.healing_threshold'" in refusal("faults.healing_threshold=-1")


def _settings_output(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, str]:
    assert cli.main(["settings", *argv]) == 0
    out, changed, key = capsys.readouterr().out, {}, ""
    for line in out.splitlines():
        if line.startswith("    now: "):
            changed[key] = line[len("    now: "):]
        else:
            key = line.split(" = ", 1)[0]
    return changed


def test_settings_command_shows_secrets_as_changed_only_when_set(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "gw.yaml"
    f.write_text("server:\n  port: 9000\n")
    changed = _settings_output(capsys, "--config", str(f))
    assert changed == {"server.port": "9000"}
    f.write_text("auth:\n  jwt_secret: " + "s" * 40 + "\n")
    changed = _settings_output(capsys, "--config", str(f))
    assert changed == {"auth.jwt_secret": "'***'"}
