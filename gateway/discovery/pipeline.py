"""Manifest-backed discovery at run time: the loaded manifest, the entity builder the cache
calls on every graph change, the reload watcher, and the status and health bodies.

A reload is atomic: the new files are read and validated off the event loop, and only a
manifest that validates replaces the old one; until then the old entity set keeps serving.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..events import ENTITIES, EntitiesChanged, Event
from ..model.entities import EntitySet
from ..settings.config import Settings
from . import linker, merge
from .manifest import Manifest, ManifestError, file_stamp, load
from .settings import DiscoverySettings
from .settle import Settle
from .validate import Issue

if TYPE_CHECKING:
    from ..events import EventBus
    from .cache import EntityCache

log = logging.getLogger(__name__)

SETTLE_POLL_S = 0.05  # how often a changed file is looked at until it settles
# A settled change that drops entities (areas, components, apps, functions) is applied only
# once the files held still this long: a writer paused mid-file longer than the settle
# window leaves a shorter file that can be a valid manifest of its own.
DROP_CONFIRM_S = 3.0


class ManifestDiscovery:
    """The manifest of `hybrid` and `manifest_only` modes and the entity sets built from it."""

    def __init__(self, settings: Settings) -> None:
        d = settings.typed(DiscoverySettings.from_settings)
        self.mode: str = d.mode
        self.path: str = d.manifest_path
        self.fragments_dir: str = d.manifest_fragments_dir
        self.csv_path: str = d.inventory_csv_path
        self.strict: bool = d.manifest_strict_validation
        self.watch_s = d.manifest_watch_interval_ms / 1000.0
        self.settle_s = d.manifest_settle_ms / 1000.0
        self.runtime_layer: bool = d.runtime_enabled
        self.gap = linker.GapFill(d.merge_pipeline_gap_fill_allow_heuristic_apps,
                                  d.merge_pipeline_gap_fill_allow_heuristic_functions,
                                  d.merge_pipeline_gap_fill_namespace_whitelist,
                                  d.merge_pipeline_gap_fill_namespace_blacklist)
        self.layer_overrides = dict(d.merge_pipeline_layers)
        for warning in merge.policies(self.layer_overrides)[1]:
            log.warning("%s", warning)
        self.manifest: Manifest = self._load()  # ManifestError stops `run` (nothing served)
        self.report = linker.Report()
        self.loaded_ns = time.time_ns()
        self.reloads = 0
        self.reload_failures = 0
        self.held_back = 0  # settled loads not applied yet because they dropped entities
        self.last_error: list[Issue] = []
        self._stamp = self._files_stamp()
        self._task: asyncio.Task[None] | None = None
        self._attached: tuple[EntityCache, EventBus] | None = None
        self._logged_orphans: frozenset[str] = frozenset()

    def _load(self) -> Manifest:
        return load(self.path, fragments_dir=self.fragments_dir, csv_path=self.csv_path,
                    strict=self.strict)

    def _files_stamp(self) -> tuple[Any, ...]:
        paths = [self.path]
        if self.csv_path:
            paths.append(self.csv_path)
        if self.fragments_dir and Path(self.fragments_dir).is_dir():
            paths.append(self.fragments_dir)
            paths.extend(str(p) for p in sorted(Path(self.fragments_dir).iterdir()))
        return file_stamp(paths)

    @property
    def linking(self) -> bool:
        """Whether the manifest-to-node linker runs (hybrid with the runtime layer)."""
        return self.mode == "hybrid" and self.runtime_layer

    def build(self, graph: Any, generation: int) -> EntitySet:
        """The entity set for a graph snapshot (the cache's builder)."""
        if self.linking:
            nodes = [linker.GraphNode(n.name, n.namespace,
                                      tuple(t for t, _ in n.publishers + n.subscribers))
                     for n in graph.nodes]
            pol = merge.policies(self.layer_overrides,
                                 self.manifest.config.allow_manifest_override)[0]
            entities, report = linker.hybrid(self.manifest, nodes, generation, self.gap, pol)
        else:
            entities, report = linker.manifest_only(self.manifest, generation)
        self.report = report
        self._log_orphans(report)
        return entities

    def _log_orphans(self, report: linker.Report) -> None:
        new = frozenset(report.orphans) - self._logged_orphans
        self._logged_orphans = frozenset(report.orphans)
        if not report.linked:
            return
        for warning in report.warnings:
            if warning.startswith("App '"):
                log.warning("%s", warning)
        level = {"warn": logging.WARNING, "error": logging.ERROR,
                 "include_as_orphan": logging.INFO}.get(report.policy)
        if level is not None:
            for fqn in sorted(new):
                log.log(level, "unmanifested node %s (policy %s)", fqn, report.policy)

    # ----- reload -----
    def attach(self, cache: EntityCache, events: EventBus) -> None:
        """Make the cache build from the manifest (reloads announced on `events`); start
        watching the files. The control features read lock_block and script_entries
        (docs/control.md)."""
        self._attached = (cache, events)
        cache.builder = self.build
        if self.watch_s > 0:
            self._task = asyncio.get_running_loop().create_task(self._watch(),
                                                                name="manifest-watch")

    def lock_block(self, kind: str, entity_id: str) -> dict[str, Any] | None:
        """The manifest `lock` block of a component or app (kind: the plural path word)."""
        entities = {"components": self.manifest.components, "apps": self.manifest.apps}
        for entity in entities.get(kind, ()):
            if entity.id == entity_id:
                return entity.lock
        return None

    def script_entries(self) -> list[dict[str, Any]]:
        """Scripts the manifest declares, top-level and per entity, of the current manifest."""
        m = self.manifest
        return [*m.scripts, *(s for e in m.components + m.apps for s in e.scripts)]

    async def stop(self) -> None:
        """Stop watching."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _watch(self) -> None:
        # A changed file is loaded once it held still for settle_s (settle.py): a manifest
        # written in place is never read half-written, however valid its first half. A load
        # that drops entities must hold still for DROP_CONFIRM_S: a writer may pause longer.
        settle = Settle(self._stamp, self.settle_s)
        while True:
            await asyncio.sleep(min(self.watch_s, SETTLE_POLL_S) if settle.pending
                                else self.watch_s)
            try:
                stamp = await asyncio.to_thread(self._files_stamp)
                now = time.monotonic()
                if not settle.due(stamp, now):
                    continue
                manifest = await self._read()
                if manifest is None:
                    self._stamp = stamp
                    continue
                dropped = entity_keys(self.manifest) - entity_keys(manifest)
                if dropped and settle.held(now) < DROP_CONFIRM_S:
                    settle.hold_back(DROP_CONFIRM_S)
                    self.held_back += 1
                    log.info("manifest change drops %d entities (e.g. %s): applied once the "
                             "files held still for %g s", len(dropped), min(dropped)[1],
                             DROP_CONFIRM_S)
                    continue
                self._stamp = stamp
                self._apply(manifest)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("manifest watch failed")

    async def reload(self) -> bool:
        """Read and validate the files again; swap in the new manifest only when it is valid."""
        manifest = await self._read()
        if manifest is None:
            return False
        self._apply(manifest)
        return True

    async def _read(self) -> Manifest | None:
        """The files read and validated off the loop; None (the failure recorded) if invalid."""
        try:
            return await asyncio.to_thread(self._load)
        except ManifestError as exc:
            self.reload_failures += 1
            self.last_error = exc.issues
            log.error("manifest reload failed; the previous manifest keeps serving: %s", exc)
            return None

    def _apply(self, manifest: Manifest) -> None:
        """Serve `manifest`: rebuild the entity set and announce it."""
        self.manifest = manifest
        self.last_error = []
        self.reloads += 1
        self.loaded_ns = time.time_ns()
        if self._attached is not None:
            cache, events = self._attached
            cache.rebuild()
            events.publish(Event(ENTITIES, None, "manifest", "reloaded",
                                 EntitiesChanged(cache.generation)))
        log.info("manifest reloaded: %s", manifest.counts())

    # ----- status and health -----
    def status(self) -> dict[str, Any]:
        """Body of GET /manifest/status."""
        m = self.manifest
        errors = len(self.last_error)
        out: dict[str, Any] = {
            "active": True, "path": self.path, "mode": self.mode,
            "metadata": dict(m.metadata), "manifest_version": m.version,
            "entity_counts": m.counts(),
            "validation": {"is_valid": True, "error_count": 0,
                           "warning_count": len(m.warnings),
                           "warnings": [w.as_dict() for w in m.warnings]},
            "files": list(m.files),
            "loaded_at_ns": self.loaded_ns,
            "reloads": self.reloads,
        }
        if self.csv_path:
            out["inventory"] = {"path": self.csv_path,
                                "skipped_rows": [s.as_dict() for s in m.inventory_skipped]}
        if errors:  # the last reload failed: the previous manifest still serves
            out["last_reload"] = {"is_valid": False, "error_count": errors,
                                  "errors": [i.as_dict() for i in self.last_error]}
        return out

    def health(self) -> dict[str, Any]:
        """Health `discovery` object."""
        out: dict[str, Any] = {"mode": self.mode,
                               "strategy": "hybrid" if self.linking else "manifest",
                               "pipeline": self.report.pipeline()}
        if self.report.linked:
            out["linking"] = self.report.linking()
        return out

    def warnings(self) -> list[dict[str, Any]]:
        """Health warnings: `unmanifested_nodes` under the `error` policy."""
        r = self.report
        if not (r.linked and r.policy == "error" and r.orphans):
            return []
        es = self._attached[0].local if self._attached is not None else EntitySet()
        by_fqn = {a.node_fqn: a.id for a in es.apps.values() if a.node_fqn}
        return [{
            "code": "unmanifested_nodes",
            "message": f"{len(r.orphans)} running node(s) are not declared in the manifest: "
                       + ", ".join(r.orphans),
            "entity_ids": [by_fqn[f] for f in r.orphans if f in by_fqn],
            "ros_node_fqns": list(r.orphans),
            "peer_names": [],
        }]


def entity_keys(manifest: Manifest) -> set[tuple[str, str]]:
    """(kind, id) of every area, component, app and function the manifest declares."""
    return {(kind, e.id) for kind, es in (("areas", manifest.areas),
                                          ("components", manifest.components),
                                          ("apps", manifest.apps),
                                          ("functions", manifest.functions)) for e in es}


def inactive_status() -> dict[str, Any]:
    """Body of GET /manifest/status in runtime_only mode."""
    return {"active": False, "path": "", "mode": "runtime_only",
            "validation": {"is_valid": True, "error_count": 0, "warning_count": 0}}
