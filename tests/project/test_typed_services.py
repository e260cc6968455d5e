"""The hub holds core collaborators; each feature's service lives under its own typed app key."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from gateway.app import make_app
from gateway.auth.enforce import AUTH, AuthRuntime
from gateway.bulk_data.keys import BULK_DATA
from gateway.bulk_data.service import BulkData
from gateway.faults.keys import FAULT_SERVICE
from gateway.faults.service import FaultService
from gateway.http.state import STATE, GatewayState
from gateway.lifecycle.control import LIFECYCLE, LifecycleControl
from gateway.locks.guard import LOCK_SERVICE, LockService
from gateway.plugins.manager import PLUGINS, PluginManager
from gateway.push.keys import PUSH_DELIVERY
from gateway.push.service import PushDelivery
from gateway.scripts.service import SCRIPT_SERVICE, ScriptService
from gateway.settings.config import load
from gateway.updates.feature import UPDATES, PluginsAndUpdates

ROOT = Path(__file__).resolve().parents[2]
FEATURE_FIELDS = {"faults", "push", "fault_triggers", "plugins", "updates", "uploads",
                  "recorder", "locks", "scripts", "lifecycle", "auth", "federation",
                  "forwarder", "discovery", "sse_slots", "parameter_events",
                  "fault_clear_filters", "fault_snapshot_providers", "push_collections",
                  "lock_entity_config", "script_definitions", "fault_entity_index"}


def test_the_hub_holds_core_collaborators_only() -> None:
    names = {f.name for f in dataclasses.fields(GatewayState)}
    assert "extras" not in names
    assert {"settings", "registry", "guard", "drain", "events", "bridge", "cache",
            "rosout"} <= names
    assert names & FEATURE_FIELDS == set()


def test_make_app_builds_every_feature_service_under_its_key(tmp_path: Path) -> None:
    app = make_app(load(None, [f"state_dir={tmp_path}"]))
    assert isinstance(app[STATE], GatewayState)
    for key, kind in ((FAULT_SERVICE, FaultService), (BULK_DATA, BulkData),
                      (PUSH_DELIVERY, PushDelivery), (UPDATES, PluginsAndUpdates),
                      (PLUGINS, PluginManager), (LOCK_SERVICE, LockService),
                      (SCRIPT_SERVICE, ScriptService), (LIFECYCLE, LifecycleControl),
                      (AUTH, AuthRuntime)):
        assert isinstance(app[key], kind), key
    app[AUTH].grants.store.close()


def test_no_module_reads_an_extras_bag() -> None:
    found = []
    for pkg in ("gateway", "recorder"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Attribute) and node.attr == "extras":
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == [], "state.extras is gone: give the service a typed app key in its " \
        "feature's package: " + ", ".join(found)
