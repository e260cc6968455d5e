"""Typed feature settings: a feature reads its settings once, into a frozen dataclass, in one
module; every key of its prefix in the settings table is read there and nowhere else."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from gateway.locks.settings import LockSettings
from gateway.scripts.settings import ScriptSettings
from gateway.settings.config import ConfigError, load
from gateway.settings.settings_table import SETTINGS

ROOT = Path(__file__).resolve().parents[2]
# settings prefix -> the one module that reads its keys
OWNERS = {"locking.": "gateway/locks/settings.py", "scripts.": "gateway/scripts/settings.py"}
_KEY = re.compile(r"""settings\[f?["']([a-z_]+\.[^"'\]]*)["']\]|\bs\[f?["']([a-z_]+\.[^"'\]]*)["']\]""")


def _read_keys(path: Path) -> set[str]:
    return {a or b for a, b in _KEY.findall(path.read_text())}


@pytest.mark.parametrize("prefix", sorted(OWNERS))
def test_a_prefix_is_read_by_its_owner_only(prefix: str) -> None:
    owner = OWNERS[prefix]
    outside = sorted(
        f"{p.relative_to(ROOT)}: {k}"
        for pkg in ("gateway", "federation", "recorder")
        for p in (ROOT / pkg).rglob("*.py")
        if str(p.relative_to(ROOT)) != owner
        for k in _read_keys(p) if k.startswith(prefix))
    assert outside == [], f"read {prefix}* through {owner}:\n" + "\n".join(outside)


def test_the_lock_settings_cover_every_locking_key() -> None:
    table = {s.key for s in SETTINGS if s.key.startswith("locking.")}
    read = _read_keys(ROOT / OWNERS["locking."])
    # the per-kind keys are read through an f-string over the kinds
    expanded = {k.replace("{kind}", kind) for k in read for kind in ("components", "apps")}
    assert table <= expanded, sorted(table - expanded)


def test_the_script_settings_cover_every_scripts_key() -> None:
    table = {s.key for s in SETTINGS if s.key.startswith("scripts.")}
    named = set(re.findall(r"[\"'](scripts\.[a-z_]+)[\"']",
                           (ROOT / OWNERS["scripts."]).read_text()))
    assert table <= named, sorted(table - named)


def test_typed_settings_are_built_once_per_resolved_settings() -> None:
    settings = load(None, ["scripts.max_file_size_mb=2", "scripts.upload_dir=~/up"])
    got = settings.typed(ScriptSettings.from_settings)
    assert got is settings.typed(ScriptSettings.from_settings)
    assert got.max_file_bytes == 2 * 1024 * 1024 and got.scripts_dir is None
    assert got.upload_dir == Path("~/up").expanduser()
    assert load(None, []).typed(ScriptSettings.from_settings) is not got


def test_lock_settings_from_the_table_and_an_error_naming_the_setting() -> None:
    got = LockSettings.from_settings(load(None, [
        "locking.cleanup_interval=5", "locking.defaults.apps.lock_required_scopes=[data]",
        "locking.defaults.apps.breakable=false"]))
    assert dataclasses.asdict(got) == {
        "enabled": True, "default_max_expiration_s": 3600.0, "cleanup_interval_s": 5.0,
        "defaults": (("components", (), True), ("apps", ("data",), False))}
    with pytest.raises(ConfigError, match="locking.defaults.components.lock_required_scopes"):
        LockSettings.from_settings(load(None, [
            "locking.defaults.components.lock_required_scopes=[nonsense]"]))
