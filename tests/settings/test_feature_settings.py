"""Typed settings: each package reads its settings once, into a frozen dataclass whose fields
are the settings table's keys (names follow the keys, types are the table's); every key of the
table is held by exactly one of them."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from gateway.auth.settings import AuthSettings
from gateway.bulk_data.settings import BulkDataSettings
from gateway.dashboard.settings import DashboardSettings
from gateway.discovery.settings import DiscoverySettings, EntityCacheSettings
from gateway.faults.settings import CorrelationSettings, FaultSettings, SnapshotSettings
from gateway.federation.settings import AggregationSettings
from gateway.http.settings import CorsSettings, DocsSettings, RateLimitSettings, SseSettings
from gateway.locks.settings import LockSettings
from gateway.mcp.settings import McpSettings
from gateway.plugins.settings import PluginSettings
from gateway.process.settings import ProcessSettings, ServerSettings
from gateway.push.settings import FaultTriggerSettings, TriggerSettings
from gateway.ros.settings import RosServiceSettings, RosSettings
from gateway.scripts.settings import ScriptKeys, ScriptSettings
from gateway.settings.config import BY_KEY, ConfigError, load
from gateway.settings.settings_table import SETTINGS
from gateway.settings.typed import TableSettings
from gateway.updates.settings import UpdateSettings
from gateway.wire.settings import ApiSettings
from recorder.config import RosbagKeys

ROOT = Path(__file__).resolve().parents[2]
TYPES = {str: "str", int: "int", float: "float", bool: "bool", tuple: "tuple[str, ...]"}

# every typed settings class -> one override: (setting, value given, field, value read)
OVERRIDES: dict[type[TableSettings], tuple[str, str, str, Any]] = {
    ServerSettings: ("server.tls.min_version", "1.3", "tls_min_version", "1.3"),
    ProcessSettings: ("state_dir", "/srv/diag", "state_dir", "/srv/diag"),
    ApiSettings: ("api.vendor", "acme", "vendor", "acme"),
    DocsSettings: ("docs.enabled", "false", "enabled", False),
    RosSettings: ("ros.rejoin.min_interval_sec", "7.5", "rejoin_min_interval_sec", 7.5),
    RosServiceSettings: ("logs.buffer_size", "17", "logs_buffer_size", 17),
    DiscoverySettings: ("discovery.merge_pipeline.gap_fill.namespace_whitelist", "[/a, /b]",
                        "merge_pipeline_gap_fill_namespace_whitelist", ("/a", "/b")),
    EntityCacheSettings: ("entity_cache.capacity", "9", "capacity", 9),
    SseSettings: ("sse.keepalive_sec", "2", "keepalive_sec", 2.0),
    CorsSettings: ("cors.allowed_origins", "[http://a.example]", "allowed_origins",
                   ("http://a.example",)),
    RateLimitSettings: ("rate_limiting.max_tracked_clients", "500", "max_tracked_clients", 500),
    AuthSettings: ("auth.require_auth_for", "all", "require_auth_for", "all"),
    FaultSettings: ("faults.healing_threshold", "5", "healing_threshold", 5),
    SnapshotSettings: ("snapshots.default_topics", "[/x]", "default_topics", ("/x",)),
    CorrelationSettings: ("correlation.config_file", "/etc/c.yaml", "config_file",
                          "/etc/c.yaml"),
    TriggerSettings: ("triggers.on_restart_behavior", "restore", "on_restart_behavior",
                      "restore"),
    FaultTriggerSettings: ("fault_triggers.max_rules", "3", "max_rules", 3),
    BulkDataSettings: ("bulk_data.categories", "[maps]", "categories", ("maps",)),
    LockSettings: ("locking.cleanup_interval", "5", "cleanup_interval", 5.0),
    ScriptKeys: ("scripts.max_file_size_mb", "2", "max_file_size_mb", 2),
    PluginSettings: ("plugin_call_timeout_sec", "9", "plugin_call_timeout_sec", 9.0),
    UpdateSettings: ("updates.enabled", "false", "enabled", False),
    DashboardSettings: ("dashboard.enabled", "false", "enabled", False),
    McpSettings: ("mcp.page_size", "20", "page_size", 20),
    AggregationSettings: ("aggregation.cache.max_age_ms", "2500", "cache_max_age_ms", 2500),
    RosbagKeys: ("snapshots.rosbag.format", "sqlite3", "format", "sqlite3"),
}
CLASSES = sorted(OVERRIDES, key=lambda c: c.__name__)


def test_every_typed_settings_class_is_listed_here() -> None:
    declared = sorted(
        node.name
        for pkg in ("gateway", "recorder")
        for path in (ROOT / pkg).rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
        and any(isinstance(b, ast.Name) and b.id == "TableSettings" for b in node.bases))
    assert declared == [c.__name__ for c in CLASSES]


def test_every_table_key_is_held_by_exactly_one_class() -> None:
    holders: dict[str, list[str]] = {}
    for cls in CLASSES:
        for key in cls.keys().values():
            holders.setdefault(key, []).append(cls.__name__)
    assert sorted(k for k in BY_KEY if k not in holders) == []
    assert {k: v for k, v in holders.items() if len(v) > 1} == {}


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_fields_are_the_table_types_and_the_class_is_frozen(cls: type[TableSettings]) -> None:
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
    types = {f.name: f.type for f in dataclasses.fields(cls)}
    assert {name: types[name] for name in cls.keys()} == \
        {name: TYPES[BY_KEY[key].type] for name, key in cls.keys().items()}


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_defaults_are_the_table_defaults(cls: type[TableSettings]) -> None:
    got = load(None, []).typed(cls.from_settings)
    default = {s.key: s.default for s in SETTINGS}
    assert {name: getattr(got, name) for name in cls.keys()} == \
        {name: default[key] for name, key in cls.keys().items()}
    assert all(dict(getattr(got, name)) == {} for name in cls.OPEN)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_a_config_override_is_read_once(cls: type[TableSettings], tmp_path: Path) -> None:
    key, given, name, read = OVERRIDES[cls]
    assert cls.keys()[name] == key
    config = tmp_path / "gateway.yaml"
    config.write_text(f"{key}: {given}\n")
    settings = load(config)
    got = settings.typed(cls.from_settings)
    assert getattr(got, name) == read != BY_KEY[key].default
    assert settings.typed(cls.from_settings) is got
    assert load(None, []).typed(cls.from_settings) != got
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(got, name, read)


def test_open_keys_are_read_only_mappings() -> None:
    s = load(None, ["faults.diagnostics_bridge.code_map.motor=MOTOR_FAULT",
                    "discovery.merge_pipeline.layers.manifest.identity=authoritative",
                    "plugins=[test_plc]", "plugins.test_plc.port=502",
                    "plugins.test_plc.unit.id=3"])
    faults = s.typed(FaultSettings.from_settings)
    assert dict(faults.diagnostics_bridge_code_map) == {"motor": "MOTOR_FAULT"}
    with pytest.raises(TypeError):
        faults.diagnostics_bridge_code_map["x"] = "y"
    layers = s.typed(DiscoverySettings.from_settings).merge_pipeline_layers
    assert dict(layers) == {"manifest.identity": "authoritative"}
    plugins = s.typed(PluginSettings.from_settings)
    assert plugins.plugins == ("test_plc",)
    assert plugins.config("test_plc") == {"port": 502, "unit.id": 3}
    assert plugins.config("test") == {}


def test_typed_settings_are_built_once_per_resolved_settings() -> None:
    settings = load(None, ["scripts.max_file_size_mb=2", "scripts.upload_dir=~/up"])
    got = settings.typed(ScriptSettings.from_settings)
    assert got is settings.typed(ScriptSettings.from_settings)
    assert got.max_file_bytes == 2 * 1024 * 1024 and got.scripts_dir is None
    assert got.upload_dir == Path("~/up").expanduser()
    assert load(None, []).typed(ScriptSettings.from_settings) is not got


def test_lock_settings_from_the_table_and_an_error_naming_the_setting() -> None:
    got = load(None, [
        "locking.cleanup_interval=5", "locking.defaults.apps.lock_required_scopes=[data]",
        "locking.defaults.apps.breakable=false"]).typed(LockSettings.from_settings)
    assert (got.enabled, got.default_max_expiration_s, got.cleanup_interval_s) == \
        (True, 3600.0, 5.0)
    assert got.defaults == (("components", (), True), ("apps", ("data",), False))
    with pytest.raises(ConfigError, match="locking.defaults.components.lock_required_scopes"):
        load(None, ["locking.defaults.components.lock_required_scopes=[nonsense]"]).typed(
            LockSettings.from_settings)
