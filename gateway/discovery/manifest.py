"""Manifest loader: YAML files (base, fragments) -> a validated Manifest, or ManifestError.

The schema is docs/manifest.md (areas with subareas, components with parents and nameplates,
apps with `ros_binding`, functions, `assets`, `config`, per-entity `lock` and `scripts`).
Nothing is half-loaded: `load` returns a complete Manifest or raises with every error.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..model.entities import Entity
from ..schemacheck import safeschema
from ..settings.config import ConfigError
from ..settings.safeyaml import BoundedSafeLoader, YamlLimitError
from . import inventory, manifest_keys
from .validate import Issue, validate

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 1024 * 1024  # spec limit: manifest fragment file and CSV inventory
TOP_KEYS = ("manifest_version", "metadata", "config", "discovery", "areas", "components",
            "assets", "apps", "functions", "scripts", "capabilities")
FRAGMENT_ALLOWED = frozenset({"apps", "components", "functions", "manifest_version"})
FRAGMENT_FORBIDDEN = ("areas", "metadata", "scripts", "capabilities", "lock_overrides",
                      "config", "discovery")
POLICIES = ("ignore", "warn", "error", "include_as_orphan")
SCRIPT_FORMATS = ("bash", "python", "sh")
_ID = re.compile(r"^[A-Za-z0-9_-]{1,256}$")


class ManifestError(ConfigError):
    """The manifest cannot be used; `issues` holds every error (and warnings under strict)."""

    def __init__(self, issues: list[Issue]) -> None:
        self.issues = issues
        lines = "\n  ".join(str(i) for i in issues)
        super().__init__(f"invalid manifest ({len(issues)} problem(s)):\n  {lines}")


@dataclass
class ManifestConfig:
    """The manifest's `config` block."""

    unmanifested_nodes: str = "warn"
    inherit_runtime_resources: bool = True
    allow_manifest_override: bool = True


@dataclass
class Manifest:
    """A loaded, validated manifest: entities by kind, scripts, config, and what was read."""

    path: str
    version: str
    metadata: dict[str, str] = field(default_factory=dict)
    config: ManifestConfig = field(default_factory=ManifestConfig)
    areas: list[Entity] = field(default_factory=list)
    components: list[Entity] = field(default_factory=list)
    apps: list[Entity] = field(default_factory=list)
    functions: list[Entity] = field(default_factory=list)
    scripts: list[dict[str, Any]] = field(default_factory=list)
    capabilities: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[Issue] = field(default_factory=list)  # non-fatal validation findings
    advisories: list[Issue] = field(default_factory=list)  # R014/R015, log-only
    inventory_skipped: list[inventory.Skipped] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Entities per kind (scripts counted across top-level and per-entity blocks)."""
        per_entity = sum(len(e.scripts) for e in self.components + self.apps)
        return {"areas": len(self.areas), "components": len(self.components),
                "apps": len(self.apps), "functions": len(self.functions),
                "scripts": len(self.scripts) + per_entity}


class _LineDict(dict[str, Any]):
    """A YAML mapping that remembers the line it starts on."""

    line = 0


class _Loader(BoundedSafeLoader):
    """Safe loader (nesting and alias expansion capped) whose mappings carry their line."""


def _construct_map(loader: _Loader, node: yaml.MappingNode) -> Any:
    data = _LineDict()
    data.line = node.start_mark.line + 1
    yield data
    data.update({str(k): v for k, v in loader.construct_mapping(node).items()})


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)


def _line(raw: Any) -> int:
    return getattr(raw, "line", 0)


class _Parser:
    """Turns one file's YAML tree into entities, collecting schema issues."""

    def __init__(self, file: str, issues: list[Issue], fragment: bool = False) -> None:
        self.file = file
        self.issues = issues
        self.fragment = fragment

    def err(self, rule: str, message: str, raw: Any = None, entity: str = "",
            level: str = "error") -> None:
        self.issues.append(Issue(rule, level, message, self.file, _line(raw), entity))

    def read_file(self, path: Path, size_rule: str) -> Any:
        """The YAML tree of a file of at most 1 MiB; None after recording the issue."""
        try:
            size = path.stat().st_size
        except OSError as exc:
            self.err(size_rule, f"cannot read: {exc.strerror}")
            return None
        if size > MAX_FILE_BYTES:
            self.err(size_rule, f"file is {size} bytes; the limit is {MAX_FILE_BYTES}")
            return None
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.err(size_rule, f"cannot read: {exc}")
            return None
        rule = "FRAGMENT_PARSE" if self.fragment else "LOAD"
        try:
            return yaml.load(text, Loader=_Loader)  # a SafeLoader subclass
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else 0
            problem = getattr(exc, "problem", None) or str(exc)
            what = "YAML refused" if isinstance(exc, YamlLimitError) else "not valid YAML"
            self.issues.append(Issue(rule, "error", f"{what}: {problem}", self.file, line))
            return None
        except RecursionError:  # a backstop: the loader's depth cap comes first
            self.issues.append(Issue(rule, "error", "YAML refused: nested too deeply",
                                     self.file, 0))
            return None

    # ----- scalar helpers -----
    def _str(self, raw: dict[str, Any], key: str, what: str, default: str = "") -> str:
        value = raw.get(key)
        if value is None:
            return default
        if isinstance(value, (dict, list)):
            self.err("SCHEMA", f"{what}: '{key}' must be a string", raw, raw.get("id", ""))
            return default
        return str(value)

    def _ids(self, raw: dict[str, Any], key: str, what: str) -> list[str]:
        value = raw.get(key)
        if value is None:
            return []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, (str, int)) for v in value):
            self.err("SCHEMA", f"{what}: '{key}' must be a list of ids", raw, raw.get("id", ""))
            return []
        return [str(v) for v in value]

    def _bool(self, raw: dict[str, Any], key: str, what: str) -> bool | None:
        value = raw.get(key)
        if value is None or isinstance(value, bool):
            return value
        self.err("SCHEMA", f"{what}: '{key}' must be true or false", raw, raw.get("id", ""))
        return None

    def _entity_id(self, raw: Any, word: str) -> str | None:
        if not isinstance(raw, dict):
            self.err("SCHEMA", f"{word} entry must be a mapping", raw)
            return None
        eid = raw.get("id")
        if eid is None or isinstance(eid, (dict, list, bool)) or not _ID.match(str(eid)):
            self.err("SCHEMA", f"{word} id {eid!r} must be 1-256 letters, digits, '_' or '-'",
                     raw, str(eid or ""))
            return None
        return str(eid)

    def _common(self, entity: Entity, raw: dict[str, Any], word: str) -> None:
        what = f"{word} '{entity.id}'"
        entity.description = self._str(raw, "description", what)
        entity.tags = self._ids_any(raw, "tags", what)
        tid = self._str(raw, "translation_id", what)
        if tid:
            entity.attrs["translation_id"] = tid
        entity.attrs["line"] = _line(raw)
        entity.attrs["file"] = self.file

    def _ids_any(self, raw: dict[str, Any], key: str, what: str) -> list[str]:
        value = raw.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or any(isinstance(v, (dict, list)) for v in value):
            self.err("SCHEMA", f"{what}: '{key}' must be a list of strings", raw, raw.get("id", ""))
            return []
        return [str(v) for v in value]

    # ----- entities -----
    def areas(self, items: Any, parent: str | None, out: list[Entity]) -> None:
        """Areas with their nested subareas (flattened, parent set)."""
        for raw in items if isinstance(items, list) else ():
            eid = self._entity_id(raw, "area")
            if eid is None:
                continue
            what = f"area '{eid}'"
            area = Entity("areas", eid, self._str(raw, "name", what, eid), source="manifest")
            self._common(area, raw, "area")
            area.namespace = self._str(raw, "namespace", what, "/" + eid)
            area.parent = parent or self._str(raw, "parent_area", what) or self._str(
                raw, "parent_area_id", what) or None
            out.append(area)
            self.areas(raw.get("subareas"), eid, out)

    def components(self, items: Any, parent: str | None, out: list[Entity]) -> None:
        """Components, nested `subcomponents:` flattened with their parent set."""
        for raw in items if isinstance(items, list) else ():
            eid = self._entity_id(raw, "component")
            if eid is None:
                continue
            what = f"component '{eid}'"
            comp = Entity("components", eid, self._str(raw, "name", what, eid),
                          source="manifest")
            self._common(comp, raw, "component")
            comp.area = self._str(raw, "area", what) or None
            comp.namespace = self._str(raw, "namespace", what) or None
            comp.parent = parent or self._str(raw, "parent_component_id", what) or None
            comp.depends_on = self._ids(raw, "depends_on", what)
            comp.external = self._bool(raw, "external", what)
            for key in ("type", "variant"):
                value = self._str(raw, key, what)
                if value:
                    comp.attrs[key] = value
            comp.attrs["fqn"] = (comp.namespace.rstrip("/") if comp.namespace else "") + "/" + eid
            ident = raw.get("identity")
            if ident is not None:
                if isinstance(ident, dict):
                    comp.identity = inventory.identity_from(ident, "manifest", what,
                                                            self._bad(raw, eid))
                else:
                    self.err("SCHEMA", f"{what}: 'identity' must be a mapping", raw, eid)
            self._lock_and_scripts(comp, raw, what)
            out.append(comp)
            self.components(raw.get("subcomponents"), eid, out)

    def _bad(self, raw: Any, eid: str) -> Callable[[str], None]:
        def bad(message: str) -> None:
            self.err("SCHEMA", message, raw, eid)
        return bad

    def apps(self, items: Any, out: list[Entity]) -> None:
        """Apps with their `ros_binding`."""
        for raw in items if isinstance(items, list) else ():
            eid = self._entity_id(raw, "app")
            if eid is None:
                continue
            what = f"app '{eid}'"
            app = Entity("apps", eid, self._str(raw, "name", what, eid), source="manifest",
                         is_online=False)
            self._common(app, raw, "app")
            app.component = self._str(raw, "is_located_on", what) or None
            app.depends_on = self._ids(raw, "depends_on", what)
            app.external = self._bool(raw, "external", what)
            binding = raw.get("ros_binding")
            if isinstance(binding, dict):
                app.binding = {
                    "node_name": self._str(binding, "node_name", what),
                    "namespace": self._str(binding, "namespace", what, "*"),
                    "topic_namespace": self._str(binding, "topic_namespace", what),
                }
            elif binding is not None:
                self.err("SCHEMA", f"{what}: 'ros_binding' must be a mapping", raw, eid)
            self._lock_and_scripts(app, raw, what)
            out.append(app)

    def functions(self, items: Any, out: list[Entity]) -> None:
        """Functions with the apps (or components) hosting them."""
        for raw in items if isinstance(items, list) else ():
            eid = self._entity_id(raw, "function")
            if eid is None:
                continue
            what = f"function '{eid}'"
            func = Entity("functions", eid, self._str(raw, "name", what, eid), source="manifest")
            self._common(func, raw, "function")
            func.hosts = self._ids(raw, "hosted_by", what) or self._ids(raw, "hosts", what)
            func.depends_on = self._ids(raw, "depends_on", what)
            out.append(func)

    def _lock_and_scripts(self, entity: Entity, raw: dict[str, Any], what: str) -> None:
        lock = raw.get("lock")
        if lock is not None and not self.fragment:  # fragments may not carry lock blocks
            entity.lock = self.lock(lock, what)
        scripts = raw.get("scripts")
        if scripts is not None:
            entity.scripts = self.scripts(scripts, what, entity.kind, entity.id)

    def lock(self, raw: Any, what: str) -> dict[str, Any] | None:
        """The per-entity lock block: required_scopes, breakable, max_expiration."""
        if not isinstance(raw, dict):
            self.err("SCHEMA", f"{what}: 'lock' must be a mapping", raw)
            return None
        scopes = self._ids_any(raw, "required_scopes", f"{what} lock")
        breakable = self._bool(raw, "breakable", f"{what} lock")
        expiration = raw.get("max_expiration", 0)
        if isinstance(expiration, bool) or not isinstance(expiration, int):
            self.err("SCHEMA", f"{what} lock: 'max_expiration' must be an integer", raw)
            expiration = 0
        return {"required_scopes": scopes, "breakable": True if breakable is None else breakable,
                "max_expiration": max(0, expiration)}

    def scripts(self, items: Any, what: str, kind: str = "", owner: str = ""
                ) -> list[dict[str, Any]]:
        """Script entries; a missing id/path/format or an unknown format is an error."""
        out: list[dict[str, Any]] = []
        if not isinstance(items, list):
            self.err("SCHEMA", f"{what}: 'scripts' must be a list", items)
            return out
        for raw in items:
            sid = self._entity_id(raw, "script")
            if sid is None:
                continue
            swhat = f"script '{sid}'"
            path = self._str(raw, "path", swhat)
            fmt = self._str(raw, "format", swhat)
            if not path:
                self.err("SCHEMA", f"{swhat}: 'path' is required", raw, sid)
            if fmt not in SCRIPT_FORMATS:
                self.err("SCHEMA", f"{swhat}: 'format' must be one of "
                         f"{'|'.join(SCRIPT_FORMATS)}, got {fmt or 'nothing'!r}", raw, sid)
            timeout = raw.get("timeout_sec", 300)
            if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 1:
                self.err("SCHEMA", f"{swhat}: 'timeout_sec' must be an integer >= 1", raw, sid)
                timeout = 300
            filters = raw.get("entity_filter", [])
            filters = [filters] if isinstance(filters, str) else filters
            if not isinstance(filters, list):
                self.err("SCHEMA", f"{swhat}: 'entity_filter' must be a list of globs", raw, sid)
                filters = []
            if owner:
                filters = [f"{kind}/{owner}"]
            env = raw.get("env", {}) or {}
            if not isinstance(env, dict) or any(isinstance(v, (dict, list)) for v in env.values()):
                self.err("SCHEMA", f"{swhat}: 'env' must be a map of scalars", raw, sid)
                env = {}
            args = raw.get("args", []) or []
            if not isinstance(args, list) or not all(isinstance(a, dict) for a in args):
                self.err("SCHEMA", f"{swhat}: 'args' must be a list of {{name, type, flag}}",
                         raw, sid)
                args = []
            entry: dict[str, Any] = {
                "id": sid, "name": self._str(raw, "name", swhat, sid),
                "description": self._str(raw, "description", swhat), "path": path,
                "format": fmt, "timeout_sec": timeout, "entity_filter": [str(f) for f in filters],
                "env": {str(k): str(v) for k, v in env.items()},
                "args": [{k: str(a.get(k, "")) for k in ("name", "type", "flag")} for a in args],
                "line": _line(raw), "file": self.file,
            }
            if isinstance(raw.get("parameters_schema"), dict):
                try:  # only local refs: a manifest schema never makes the gateway fetch
                    entry["parameters_schema"] = safeschema.check(
                        _plain(raw["parameters_schema"]), f"{swhat}: 'parameters_schema'")
                except safeschema.SchemaRefused as exc:
                    self.err("SCHEMA", str(exc), raw, sid)
            out.append(entry)
        return out


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _config(p: _Parser, tree: dict[str, Any], advisories: list[Issue]) -> ManifestConfig:
    cfg = ManifestConfig()
    blocks = [b for b in (tree.get("discovery"), tree.get("config")) if b is not None]
    for block in blocks:  # `config` last, so it wins over the deprecated `discovery`
        if not isinstance(block, dict):
            advisories.append(Issue("R015", "warning", "'config' must be a mapping; ignored",
                                    p.file, _line(tree)))
            continue
        policy = block.get("unmanifested_nodes")
        if policy is not None:
            if not isinstance(policy, str):
                advisories.append(Issue("R015", "warning", "config.unmanifested_nodes must be "
                                        "a string; using 'warn'", p.file, _line(block)))
            elif policy.lower() not in POLICIES:
                advisories.append(Issue("R014", "warning", f"unknown unmanifested_nodes policy "
                                        f"{policy!r} (one of {'|'.join(POLICIES)}); using "
                                        "'warn'", p.file, _line(block)))
                cfg.unmanifested_nodes = "warn"
            else:
                cfg.unmanifested_nodes = policy.lower()
        for key in ("inherit_runtime_resources", "allow_manifest_override"):
            value = block.get(key)
            if value is None:
                continue
            if not isinstance(value, bool):
                advisories.append(Issue("R015", "warning", f"config.{key} must be true or "
                                        "false; ignored", p.file, _line(block)))
                continue
            setattr(cfg, key, value)
    return cfg


def _fragment_files(directory: str) -> list[Path]:
    root = Path(directory)
    if not directory or not root.is_dir():
        return []
    real_root = root.resolve()
    out = []
    for path in sorted(root.iterdir()):
        if path.suffix not in (".yaml", ".yml") or not path.is_file():
            continue
        if not path.resolve().is_relative_to(real_root):
            log.warning("manifest fragment %s leaves %s; skipped", path, directory)
            continue
        out.append(path)
    return out


def load(path: str, *, fragments_dir: str = "", csv_path: str = "",
         strict: bool = True) -> Manifest:
    """Read, parse and validate base manifest, fragments and CSV; ManifestError when unusable."""
    issues: list[Issue] = []
    advisories: list[Issue] = []
    p = _Parser(path, issues)
    tree = p.read_file(Path(path), "LOAD") if path else None
    if not path:
        p.err("LOAD", "no manifest file given (setting discovery.manifest_path)")
    if tree is not None and not isinstance(tree, dict):
        p.err("LOAD", "the top level must be a mapping")
        tree = None
    if tree is None:
        raise ManifestError(issues)
    for key in tree:
        if key not in TOP_KEYS:
            log.warning("manifest %s: unknown top-level key %r ignored%s (known: %s)", path,
                        key, manifest_keys.top_level_hint(key, TOP_KEYS), ", ".join(TOP_KEYS))
    for unknown in manifest_keys.unknown_keys(tree):
        log.warning("%s", unknown.message(path))
    raw_version = tree.get("manifest_version")
    if raw_version is None:
        p.err("LOAD", "'manifest_version' is required (\"1.0\")", tree)
        raise ManifestError(issues)
    meta_raw = tree.get("metadata") or {}
    metadata = {k: str(meta_raw[k]) for k in ("name", "version", "description", "created_at")
                if isinstance(meta_raw, dict) and meta_raw.get(k) is not None}
    m = Manifest(path=path, version=str(raw_version), metadata=metadata,
                 config=_config(p, tree, advisories), files=[path])
    p.areas(tree.get("areas"), None, m.areas)
    p.components(tree.get("components"), None, m.components)
    p.apps(tree.get("apps"), m.apps)
    p.functions(tree.get("functions"), m.functions)
    if tree.get("scripts") is not None:
        m.scripts = p.scripts(tree["scripts"], "manifest")
    caps = tree.get("capabilities")
    if isinstance(caps, dict):
        m.capabilities = {str(k): {} for k in caps}
    assets = tree.get("assets")
    if isinstance(assets, list):
        for raw in assets:
            comp = inventory.asset_component(raw, path, issues)
            if comp is not None:
                m.components.append(comp)
    for frag in _fragment_files(fragments_dir):
        _fragment(frag, m, issues)
    if csv_path:
        inventory.merge_csv(csv_path, m, issues)
    found = validate(m)
    errors = [i for i in issues + found if i.level == "error"]
    warnings = [i for i in found if i.level == "warning"]
    for issue in advisories:
        log.warning("manifest: %s", issue)
    if errors or (strict and warnings):
        raise ManifestError(errors + (warnings if strict else []))
    for issue in warnings:
        log.warning("manifest: %s", issue)
    m.warnings = warnings
    m.advisories = advisories
    return m


def _fragment(path: Path, m: Manifest, issues: list[Issue]) -> None:
    p = _Parser(str(path), issues, fragment=True)
    tree = p.read_file(path, "FRAGMENT_PARSE")
    if tree is None:
        return
    if not isinstance(tree, dict):
        p.err("FRAGMENT_PARSE", "the top level must be a mapping")
        return
    for key in tree:
        if key in FRAGMENT_FORBIDDEN:
            p.err("FRAGMENT_FORBIDDEN_FIELD", f"a fragment may not declare '{key}'", tree)
        elif key not in FRAGMENT_ALLOWED:
            log.warning("manifest fragment %s: unknown key %r ignored%s", path, key,
                        manifest_keys.top_level_hint(key, FRAGMENT_ALLOWED))
    for unknown in manifest_keys.unknown_keys(tree):
        log.warning("%s", unknown.message(str(path)))
    version = tree.get("manifest_version")
    if version is not None and str(version) != "1.0":
        p.err("R001", f"manifest_version must be \"1.0\", got {version!r}", tree)
    p.components(tree.get("components"), None, m.components)
    p.apps(tree.get("apps"), m.apps)
    p.functions(tree.get("functions"), m.functions)
    m.files.append(str(path))


def file_stamp(paths: list[str]) -> tuple[Any, ...]:
    """(size, mtime_ns, inode) of each path (None when absent): a change means reload."""
    out: list[Any] = []
    for path in paths:
        try:
            st = os.stat(path)
            out.append((path, st.st_size, st.st_mtime_ns, st.st_ino))
        except OSError:
            out.append((path, None))
    return tuple(out)
