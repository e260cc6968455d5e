"""Settings: YAML plus overrides, clamping with warnings, refusals naming the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.settings import config


def test_defaults_match_the_spec() -> None:
    s = config.load()
    assert s["server.host"] == "127.0.0.1" and s["server.port"] == 8080
    assert s["discovery.mode"] == "runtime_only"
    assert s["discovery.refresh_debounce_ms"] == 1000
    assert s["entity_cache.capacity"] == 256
    assert s["sse.max_clients"] == 2 and s["sse.max_duration_sec"] == 3600
    assert s["topic_sample_timeout_sec"] == 2.0 and s["service_call_timeout_sec"] == 10.0
    assert s.vendor == "vendor"


def test_yaml_file_then_overrides(tmp_path: Path) -> None:
    f = tmp_path / "gw.yaml"
    f.write_text("server:\n  port: 9000\n  host: 127.0.0.2\nsse:\n  max_clients: 5\n")
    s = config.load(f, ["server.port=9100", "docs.enabled=false"])
    assert s["server.port"] == 9100 and s["server.host"] == "127.0.0.2"
    assert s["sse.max_clients"] == 5 and s["docs.enabled"] is False


def test_out_of_range_is_clamped_with_a_warning_naming_the_setting() -> None:
    s = config.load(None, ["sse.max_clients=0", "discovery.refresh_debounce_ms=999999"])
    assert s["sse.max_clients"] == 1
    assert s["discovery.refresh_debounce_ms"] == 60000
    assert any("'sse.max_clients'" in w for w in s.warnings)
    assert any("'discovery.refresh_debounce_ms'" in w for w in s.warnings)


@pytest.mark.parametrize(("override", "named"), [
    ("server.port=0", "server.port"),
    ("server.port=http", "server.port"),
    ("server.porrt=1", "server.porrt"),
    ("docs.enabled=maybe", "docs.enabled"),
    ("discovery.mode=galaxy", "discovery.mode"),
    ("discovery.mode=hybrid", "discovery.mode"),
    ("api.vendor=Bad Word", "api.vendor"),
    ("topic_sample_timeout_sec=[1]", "topic_sample_timeout_sec"),
])
def test_refusals_name_the_setting(override: str, named: str) -> None:
    with pytest.raises(config.ConfigError, match=f"'{named}'"):
        config.load(None, [override])


def test_manifest_modes_need_a_manifest_and_csv_only_there() -> None:
    with pytest.raises(config.ConfigError, match="'discovery.manifest_path'"):
        config.load(None, ["discovery.mode=manifest_only"])
    s = config.load(None, ["discovery.mode=hybrid", "discovery.manifest_path=/m.yaml"])
    assert s["discovery.manifest_strict_validation"] is True
    s = config.load(None, ["discovery.inventory.csv_path=/inv.csv"])
    assert any("'discovery.inventory.csv_path'" in w for w in s.warnings)


def test_removed_discovery_parameters_are_warned_and_ignored() -> None:
    s = config.load(None, ["discovery.create_synthetic_areas=true"])
    assert any("create_synthetic_areas" in w for w in s.warnings)


def test_bad_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(config.ConfigError, match="cannot read"):
        config.load(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("server: [1, 2\n")
    with pytest.raises(config.ConfigError, match="not valid YAML"):
        config.load(bad)
    with pytest.raises(config.ConfigError, match="key=value"):
        config.load(None, ["server.port"])


def test_secrets_are_redacted() -> None:
    s = config.load(None, ["auth.jwt_secret=hunter2", "auth.clients=[a:b:viewer]"])
    shown = s.as_dict()
    assert shown["auth.jwt_secret"] == "***" and shown["auth.clients"] == "***"
    assert s["auth.jwt_secret"] == "hunter2"


def test_a_settings_file_with_a_yaml_bomb_is_refused_naming_the_file(tmp_path: Path) -> None:
    """Aliases that expand a small file into a huge tree are refused while reading, as for
    manifests; read as it is, this file flattens into a million setting keys."""
    lines = ["l0: &l0 {k: v}"]
    for level in range(1, 7):
        refs = ", ".join(f"k{j}: *l{level - 1}" for j in range(10))
        lines.append(f"l{level}: &l{level} {{{refs}}}")
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(config.ConfigError, match=r"bomb\.yaml: not valid YAML: .*aliases expand"):
        config.load(path)
