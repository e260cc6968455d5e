"""The manifest pipeline behind the entity cache: builds, health, warnings, atomic reloads."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

from gateway.discovery.cache import EntityCache
from gateway.discovery.pipeline import ManifestDiscovery
from gateway.discovery.runtime import HostInfo
from gateway.events import ENTITIES, Event, EventBus
from gateway.ros.graph.snapshot import GraphSnapshot, NodeInfo
from gateway.settings import config
from tests.discovery.test_linker import MANIFEST

GRAPH = GraphSnapshot(nodes=(
    NodeInfo("temp_sensor", "/powertrain/engine"), NodeInfo("stray", "/a"),
    NodeInfo("stray", "/b"), NodeInfo("temp_monitor", "/x"), NodeInfo("temp_monitor", "/y")))


def setup(tmp_path: Path, policy: str, mode: str = "hybrid"
          ) -> tuple[ManifestDiscovery, SimpleNamespace, Path]:
    path = tmp_path / "m.yaml"
    path.write_text(MANIFEST % policy)
    s = config.load(None, [f"discovery.mode={mode}", f"discovery.manifest_path={path}",
                           "discovery.manifest.watch_interval_ms=0",
                           "discovery.manifest_strict_validation=false"])
    disc = ManifestDiscovery(s)
    state = SimpleNamespace(cache=EntityCache(16, HostInfo("h")), events=EventBus())
    disc.attach(state.cache, state.events)
    state.cache.apply(GRAPH)
    return disc, state, path


def test_hybrid_build_health_and_error_policy_warning(tmp_path: Path) -> None:
    disc, state, _ = setup(tmp_path, "error")
    apps = state.cache.entities.apps
    assert apps["sensor"].is_online and {"a_stray", "b_stray"} <= set(apps)
    # both temp_monitor nodes are linked: only the orphans' shared name is a collision
    assert state.cache.collisions == [("stray", ["/a/stray", "/b/stray"])]
    health = disc.health()
    assert health["mode"] == "hybrid" and health["strategy"] == "hybrid"
    assert health["linking"] == {"linked_count": 3, "orphan_count": 2, "binding_conflicts": 0,
                                 "unmanifested_policy": "error"}
    (warning,) = disc.warnings()
    assert warning["code"] == "unmanifested_nodes"
    assert warning["ros_node_fqns"] == ["/a/stray", "/b/stray"]
    assert warning["entity_ids"] == ["a_stray", "b_stray"]


def test_manifest_only_ignores_the_graph(tmp_path: Path) -> None:
    disc, state, _ = setup(tmp_path, "warn", "manifest_only")
    assert not any(a.is_online for a in state.cache.entities.apps.values())
    assert "linking" not in disc.health() and disc.warnings() == []
    assert disc.status()["entity_counts"]["apps"] == 6


def test_reload_is_atomic(tmp_path: Path) -> None:
    disc, state, path = setup(tmp_path, "warn")
    seen: list[Event] = []
    state.events.subscribe([ENTITIES], seen.append)
    generation = state.cache.generation
    path.write_text((MANIFEST % "warn").replace("is_located_on: board", "is_located_on: nope"))
    assert asyncio.run(disc.reload()) is False
    assert state.cache.generation == generation and seen == []
    status = disc.status()
    assert status["last_reload"]["errors"][0]["rule"] == "R007"
    assert status["reloads"] == 0 and "board" in state.cache.entities.components
    path.write_text((MANIFEST % "ignore").replace("components:\n", "components:\n"
                                                                    "  - id: board2\n"))
    assert asyncio.run(disc.reload()) is True
    assert state.cache.generation == generation + 1
    assert "board2" in state.cache.entities.components and "a_stray" not in \
        state.cache.entities.apps
    assert "last_reload" not in disc.status() and disc.status()["reloads"] == 1
    assert [(e.kind, e.change) for e in seen] == [("entities", "reloaded")]


def test_demo_manifest_flag_selects_hybrid_with_the_shipped_files() -> None:
    from gateway.cli import _manifest_overrides, parser

    args = parser().parse_args(["demo", "--manifest"])
    overrides = _manifest_overrides(args.manifest)
    s = config.load(None, overrides)
    assert s["discovery.mode"] == "hybrid"
    assert Path(s["discovery.manifest_path"]).is_file()
    assert Path(s["discovery.inventory.csv_path"]).is_file()
    assert parser().parse_args(["demo"]).manifest is None
    own = _manifest_overrides(parser().parse_args(["demo", "--manifest", "/m.yaml"]).manifest)
    assert own == ["discovery.mode=hybrid", "discovery.manifest_path=/m.yaml"]


def test_lock_blocks_and_scripts_reach_the_control_features(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    text = (MANIFEST % "warn").replace(
        "  - id: board\n",
        "  - id: board\n    lock: {required_scopes: [configurations], breakable: false}\n"
        "    scripts:\n      - {id: selftest, path: /bin/true, format: bash}\n")
    path.write_text(text)
    s = config.load(None, ["discovery.mode=hybrid", f"discovery.manifest_path={path}",
                           "discovery.manifest.watch_interval_ms=0",
                           "discovery.manifest_strict_validation=false"])
    disc = ManifestDiscovery(s)
    state = SimpleNamespace(cache=EntityCache(16, HostInfo("h")), events=EventBus())
    disc.attach(state.cache, state.events)
    block = disc.lock_block("components", "board")  # what LockService resolves first
    assert block is not None and block["required_scopes"] == ["configurations"]
    assert block["breakable"] is False
    assert disc.lock_block("components", "ecu") is None
    assert disc.lock_block("apps", "board") is None
    (script,) = disc.script_entries()  # what ScriptService lists besides its directory
    assert script["id"] == "selftest" and script["path"] == "/bin/true"
