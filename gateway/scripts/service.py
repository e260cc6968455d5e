"""The script service: managed and uploaded scripts of this gateway and their runner."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ..errors import not_found
from ..model.entities import Entity
from ..process.settings import ProcessSettings
from ..schemacheck import schema_worker
from ..settings.config import ConfigError
from .catalog import (
    RunAs,
    Script,
    ScriptError,
    UploadStore,
    default_upload_root,
    managed_from,
    root_refusal,
    run_as,
    runs_dir,
    scan_managed,
)
from .containment import Containment
from .runner import Runner
from .settings import ScriptSettings

if TYPE_CHECKING:
    from ..http.state import GatewayState

log = logging.getLogger(__name__)


class ScriptService:
    """Managed and uploaded scripts of this gateway and their executions."""

    def __init__(self, state: GatewayState,
                 definitions: Callable[[], list[Any]] | None = None) -> None:
        s = state.settings
        self.definitions = definitions  # the manifest's `scripts` block (discovery/pipeline.py)
        cfg = self.settings = s.typed(ScriptSettings.from_settings)
        self.state = state
        self.scripts_dir = cfg.scripts_dir
        self.run_as = RunAs()
        if self.enabled and cfg.run_as_user:
            try:
                self.run_as = run_as(cfg.run_as_user)
            except ScriptError as exc:
                raise ConfigError(str(exc)) from None
        refusal = root_refusal(self.enabled, os.geteuid(), cfg.run_as_user, cfg.allow_root)
        if refusal is not None:
            raise ConfigError(refusal)
        state_dir = s.typed(ProcessSettings.from_settings).state_dir
        self.uploads = UploadStore(cfg.upload_dir or default_upload_root(state_dir),
                                   self.run_as.gid, state.storage)
        self.uploaded: dict[str, Script] = {}
        self._managed: list[Script] = []
        self._scan_key: Any = None
        containment = Containment(runs_dir(state_dir), use_cgroup=True,
                                  storage=state.storage) if self.enabled \
            else Containment(None, use_cgroup=False)
        self.runner = Runner(cfg.max_concurrent_executions, cfg.max_execution_history,
                             cfg.max_output_bytes, containment, cfg.stop_grace_s)

    @property
    def enabled(self) -> bool:
        """A backend exists: a scripts directory is configured."""
        return self.scripts_dir is not None

    async def start(self) -> None:
        """Nothing to start: install() loaded the uploads."""

    async def shutdown(self) -> None:
        """Nothing streams."""

    def health_blocks(self) -> dict[str, Callable[[], Any]]:
        """The x-vendor-scripts block of /health (a backend configured)."""
        if not self.enabled:
            return {}
        runner = self.runner
        return {"x-vendor-scripts": lambda: {
            "running": runner.running(), "max_concurrent_executions": runner.max_concurrent,
            "executions_kept": len(runner.executions), "uploaded": len(self.uploaded),
            "containment": runner.containment.kind}}

    async def stop(self) -> None:
        """Kill running executions; end the parameter validation workers."""
        if self.enabled:
            await self.runner.close()
            await schema_worker.close()

    def load(self) -> None:
        """Read the stored uploads."""
        self.uploaded = {sc.id: sc for sc in self.uploads.load()}

    def managed(self) -> list[Script]:
        """Managed scripts: the directory (rescanned when it changed) and manifest entries."""
        assert self.scripts_dir is not None
        try:
            key = self.scripts_dir.stat().st_mtime_ns
        except OSError:
            key = None
        if key != self._scan_key:
            self._scan_key = key
            self._managed, problems = scan_managed(self.scripts_dir)
            for problem in problems:
                log.warning("managed script skipped: %s", problem)
        extra: list[Script] = []
        # The manifest's `scripts` block: entries {id, name, description, path, format,
        # timeout_sec, entity_filter, env, args, parameters_schema}.
        source = self.definitions
        for entry in (source() if source is not None else ()):
            try:
                extra.append(managed_from(entry, Path(entry["path"]), entry["id"]))
            except (ScriptError, KeyError) as exc:
                log.warning("manifest script skipped: %s", exc)
        return [*self._managed, *extra]

    def scripts_of(self, entity: Entity) -> list[Script]:
        """Scripts offered on an entity: managed first, then its uploads."""
        out = [sc for sc in self.managed() if sc.applies_to(entity.kind, entity.id)]
        seen = {sc.id for sc in out}
        out += [sc for sc in self.uploaded.values()
                if sc.applies_to(entity.kind, entity.id) and sc.id not in seen]
        return out

    def script(self, entity: Entity, script_id: str) -> Script:
        """One script of the entity; 404 otherwise."""
        for sc in self.scripts_of(entity):
            if sc.id == script_id:
                return sc
        raise not_found(f"Script '{script_id}' not found on {entity.type} '{entity.id}'",
                        entity_id=entity.id, script_id=script_id)


SCRIPT_SERVICE: web.AppKey[ScriptService] = web.AppKey("script_service", ScriptService)
