"""The package map: core never imports a feature; package pairs that import each other shrink;
only the composition root imports another package's handler modules.

Every import counts: top level, inside functions and under `if TYPE_CHECKING:`. A module is
placed by the longest prefix in LAYERS; a new package must be declared there.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.project.importgraph import edges
from tests.project.importgraph import modules as _modules

CORE, FEATURE, ROOT = "core", "feature", "root"

# Longest prefix wins; a core entry carries its rank (a core module imports only core modules
# of its rank or lower). Core: the one error tree, process tuning, the model, settings, the
# event bus (0); the ROS bridge (1); the entity cache from the graph (2); the HTTP server,
# middleware, guard, roles, the wire base and the hub `http/state.py` (3). Features own their
# service (under a typed app key), handlers and wire shapes. Root: the composition (app, cli,
# the wire bundle).
LAYERS: dict[str, tuple[str, int]] = {
    # core
    "gateway": (CORE, 0),  # the package's __init__ (version only)
    "gateway.errors": (CORE, 0),  # the one error tree (ApiError and its makers)
    "gateway.events": (CORE, 0),  # the event bus
    "gateway.model": (CORE, 0),  # entities, ids, items, roles, resource URIs
    "gateway.settings": (CORE, 0),  # the table, loading and checks, secrets, the safe YAML loader
    "gateway.process": (CORE, 0),  # process tuning, state files, storage health
    "gateway.schemacheck": (CORE, 0),  # JSON Schema checks that cannot hang
    "gateway._fast": (CORE, 0),  # the CDR->JSON converter twins
    "gateway.ros": (CORE, 1),  # the only rclpy importer: dds graph interfaces calls topics rejoin
    "gateway.discovery": (CORE, 2),  # from the graph (and manifests) to the entity cache
    "gateway.http": (CORE, 3),  # server, middleware, guard, route table, OpenAPI, the hub
    "gateway.auth": (CORE, 3),  # tokens and the role check of the guard
    "gateway.wire": (CORE, 3),  # the serializer base, bodies, errors, entities, docs, auth
    "gateway.wire.core": (CORE, 3),  # the hub's core serializers (a unit: http reads it)
    "gateway.wire.settings": (CORE, 0),  # api.* typed settings (a unit: the hub reads it)
    # features: each owns its service, handlers and wire shapes
    "gateway.faults": (FEATURE, 0),
    "gateway.push": (FEATURE, 0),  # cyclic subscriptions, triggers, fault triggers
    "gateway.locks": (FEATURE, 0),
    "gateway.scripts": (FEATURE, 0),
    "gateway.lifecycle": (FEATURE, 0),
    "gateway.logs": (FEATURE, 0),
    "gateway.operations": (FEATURE, 0),
    "gateway.configurations": (FEATURE, 0),
    "gateway.bulk_data": (FEATURE, 0),
    "gateway.updates": (FEATURE, 0),
    "gateway.plugins": (FEATURE, 0),
    "gateway.graph": (FEATURE, 0),
    "gateway.dashboard": (FEATURE, 0),
    "gateway.demo": (FEATURE, 0),
    "gateway.mcp": (FEATURE, 0),
    "gateway.data": (FEATURE, 0),  # data reads and writes, the read's body cache, wire shapes
    "gateway.entities": (FEATURE, 0),  # entity collections and items, status, manifest status
    "gateway.server_info": (FEATURE, 0),  # root, version-info, health, OpenAPI documents
    "gateway.federation": (FEATURE, 0),
    "recorder": (FEATURE, 0),
    # root: the composition
    "gateway.app": (ROOT, 0),
    "gateway.cli": (ROOT, 0),
    "gateway.__main__": (ROOT, 0),
}

# Core modules that still import upward (module -> module), each with its reason. Shrink only.
# (22 on 2026-12-02 before the first step; empty since the hub moved to gateway/http/state.py.)
UPWARD: dict[tuple[str, str], str] = {}

# Package pairs that still import each other, each with its reason. Shrink only: a pair that
# no longer imports both ways must leave this list, and a new pair fails the test.
# (22 on 2026-12-02 before the first step; empty since each feature's service lives under a
# typed app key in its own package.)
MUTUAL: dict[tuple[str, str], str] = {}


def _layer(mod: str) -> tuple[str, int] | None:
    """The layer and core rank of a module: its longest declared prefix."""
    name = mod
    while name:
        if name in LAYERS:
            return LAYERS[name]
        name = name.rpartition(".")[0]
    return None


def _package(mod: str) -> str:
    """The unit a module counts for in the pair count: gateway.<sub> (a root module of gateway
    is its own), recorder; a module the map places apart from its package (a
    LAYERS entry below gateway.<sub>) is a unit of its own."""
    name = mod
    while name and name not in LAYERS:
        name = name.rpartition(".")[0]
    if name.count(".") >= 2:
        return name
    parts = mod.split(".")
    return ".".join(parts[:2]) if parts[0] == "gateway" and len(parts) > 1 else parts[0]


def all_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement at any depth, `if TYPE_CHECKING:` included."""
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def import_edges(modules: dict[str, Path]) -> set[tuple[str, str]]:
    """(importer, imported) for every import between modules of the checked packages."""
    return edges(modules, all_imports)


def mutual_pairs(edges: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """Sorted package pairs where each package imports the other."""
    pkg_edges = {(_package(a), _package(b)) for a, b in edges}
    return {(a, b) for a, b in pkg_edges if a < b and (b, a) in pkg_edges}


def upward(edges: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """Core modules importing a feature, the root, or a core module of a higher rank."""
    found: set[tuple[str, str]] = set()
    for a, b in edges:
        (layer_a, rank_a), (layer_b, rank_b) = _layer(a) or ("", 0), _layer(b) or ("", 0)
        if layer_a == CORE and (layer_b != CORE or rank_b > rank_a):
            found.add((a, b))
    return found


def test_every_module_is_on_the_map() -> None:
    unmapped = sorted(m for m in _modules() if _layer(m) is None)
    assert unmapped == [], "declare these in LAYERS:\n" + "\n".join(unmapped)


def test_core_never_imports_a_feature() -> None:
    assert [k for k in UPWARD if (_layer(k[1]) or ("", 0))[0] == FEATURE] == []  # no exceptions
    found = upward(import_edges(_modules()))
    new = sorted(found - UPWARD.keys())
    gone = sorted(UPWARD.keys() - found)
    assert new == [], "core imports upward (move the code down or publish on the bus):\n" + \
        "\n".join(f"{a} -> {b}" for a, b in new)
    assert gone == [], "no longer imported upward, drop from UPWARD:\n" + \
        "\n".join(f"{a} -> {b}" for a, b in gone)


def test_mutually_importing_packages_only_shrink() -> None:
    found = mutual_pairs(import_edges(_modules()))
    new = sorted(found - MUTUAL.keys())
    gone = sorted(MUTUAL.keys() - found)
    assert new == [], "packages now import each other:\n" + \
        "\n".join(f"{a} <-> {b}" for a, b in new)
    assert gone == [], "no longer mutual, drop from MUTUAL:\n" + \
        "\n".join(f"{a} <-> {b}" for a, b in gone)


def test_finder_sees_function_and_type_checking_imports(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "a.py").write_text("def f():\n    from . import b\n")
    (tmp_path / "p" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p.a import f\n")
    modules = {"p.a": tmp_path / "p" / "a.py", "p.b": tmp_path / "p" / "b.py"}
    assert import_edges(modules) == {("p.a", "p.b"), ("p.b", "p.a")}


def test_upward_and_mutual_are_seen() -> None:
    edges = {("gateway.ros.bridge", "gateway.http.errors"), ("gateway.http.routes", "gateway.faults.x"),
             ("gateway.faults.x", "gateway.push.y"), ("gateway.push.y", "gateway.faults.z"),
             ("gateway.faults.x", "gateway.ros.bridge")}
    assert upward(edges) == {("gateway.ros.bridge", "gateway.http.errors"),
                             ("gateway.http.routes", "gateway.faults.x")}
    assert mutual_pairs(edges) == {("gateway.faults", "gateway.push")}


# The composition root registers every feature's handlers; no other module imports a handler
# module of another unit (a shared name lives in the owning feature's service or keys module).
HANDLER_IMPORTERS = frozenset({"gateway.app", "gateway.cli"})


def _is_handlers(mod: str) -> bool:
    """A handler module: `<pkg>.handlers` or any module whose name has `handlers` in it."""
    return "handlers" in mod.rpartition(".")[2]


def foreign_handler_imports(edges: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """(importer, handler module) where the handler module belongs to another unit."""
    return {(a, b) for a, b in edges
            if _is_handlers(b) and a not in HANDLER_IMPORTERS and _package(a) != _package(b)}


def test_no_feature_imports_another_units_handlers() -> None:
    found = sorted(foreign_handler_imports(import_edges(_modules())))
    assert found == [], "import the owner's service or keys module, not its handlers:\n" + \
        "\n".join(f"{a} -> {b}" for a, b in found)


def test_foreign_handler_imports_are_seen() -> None:
    edges = {("gateway.push.cyclic", "gateway.faults.handlers"),
             ("gateway.dashboard.page", "gateway.push.subscription_handlers"),
             ("gateway.push.trigger_handlers", "gateway.push.subscription_handlers"),
             ("gateway.app", "gateway.faults.handlers"),
             ("gateway.faults.handlers", "gateway.faults.service")}
    assert foreign_handler_imports(edges) == {
        ("gateway.push.cyclic", "gateway.faults.handlers"),
        ("gateway.dashboard.page", "gateway.push.subscription_handlers")}
