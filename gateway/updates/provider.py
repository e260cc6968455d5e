"""The first-party update provider plugin: packages from bulk-data or a path, staged, swapped."""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from ..plugins.api import UPDATES, AlreadyExists, InvalidInput, NotFound, Plugin, PluginError
from ..plugins.context import PluginContext
from ..process.settings import ProcessSettings
from ..process.statefiles import default_state_dir
from ..process.storage import StorageHealth, StorageWriteError
from . import package, rules
from .package import Limits, PackageError
from .rules import BULK_URI, RuleError

log = logging.getLogger(__name__)

KEEP_RELEASES = 2  # the live release and the one a failed post-install rolls back to
STORE = "updates"  # the store's name in storage health and 507 messages
METADATA_ONLY = "metadata only"  # sub-progress step of a registration without `package`


def _state_dir(ctx: PluginContext | None) -> Path:
    configured = ctx.settings.typed(ProcessSettings.from_settings).state_dir if ctx else ""
    return Path(configured).expanduser() if configured else default_state_dir()


class UpdateProviderPlugin(Plugin):
    """Registers packages, verifies and stages them (prepare), swaps them in (execute)."""

    def __init__(self) -> None:
        self.ctx: PluginContext | None = None
        self.config: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._meta: dict[str, dict[str, Any]] = {}
        self.root = Path()
        self.staging = Path()
        self.install_root = Path()

    # plugin ---------------------------------------------------------------------------------
    def configure(self, config: dict[str, Any]) -> None:
        """Settings: install_root, staging_dir, post_install_timeout_sec, package_dirs,
        max_unpacked_bytes, max_expansion_ratio."""
        self.config = dict(config)
        self.post_install_timeout_s = _number(self.config, "post_install_timeout_sec", 300.0,
                                              0.001, 86400.0)
        dirs = self.config.get("package_dirs") or []
        if isinstance(dirs, str):
            dirs = [dirs]
        if not isinstance(dirs, (list, tuple)) or not all(isinstance(d, str) for d in dirs):
            raise ValueError("setting 'plugins.update_provider.package_dirs' must be a list of "
                             "directories")
        self.package_dirs = [d for d in dirs if d.strip()]
        self.limits = Limits(
            int(_number(self.config, "max_unpacked_bytes", float(1 << 30), 1.0, float(1 << 50))),
            _number(self.config, "max_expansion_ratio", 100.0, 1.0, 1e6))

    def set_context(self, ctx: PluginContext) -> None:
        """Resolve the directories (default below the gateway's state directory)."""
        self.ctx = ctx
        self.root = _state_dir(ctx) / "updates"
        self.staging = Path(self.config.get("staging_dir") or self.root / "staging").expanduser()
        self.install_root = Path(self.config.get("install_root")
                                 or self.root / "installed").expanduser()
        for d in (self.root, self.staging, self.install_root / ".releases"):
            try:  # a full or read-only disk at start: served, /health names the store
                with self._writing(d):
                    d.mkdir(parents=True, exist_ok=True)
            except StorageWriteError:  # logged by storage health (once)
                log.debug("updates: cannot create %s", d, exc_info=True)
        if ctx.storage is not None:  # a full disk at start: /health names the store at once
            ctx.storage.check(STORE, self.root)
        index = self.root / "registry.json"
        if index.is_file():
            self._meta = json.loads(index.read_text())
        # A restart forgets every prepared status: trees staged before it are stale.
        for stale in (self.staging.iterdir() if self.staging.is_dir() else ()):
            _remove(stale)

    def providers(self) -> dict[str, Any]:
        """This plugin is an update provider."""
        return {UPDATES: self}

    def _writing(self, directory: Path) -> AbstractContextManager[None]:
        """A write of this store: StorageWriteError (507, /health degraded) when it fails."""
        storage = self.ctx.storage if self.ctx is not None else StorageHealth()
        return storage.writing(STORE, directory)

    def _save(self) -> None:
        index = self.root / "registry.json"
        tmp = index.with_suffix(".tmp")
        with self._writing(self.root):
            self.root.mkdir(parents=True, exist_ok=True)  # not there when the disk was full
            try:
                tmp.write_text(json.dumps(self._meta))
                os.replace(tmp, index)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise

    # provider -------------------------------------------------------------------------------
    def list_updates(self, filters: dict[str, str]) -> list[str]:
        """Ids, filtered by origin and target version."""
        out = []
        for uid, meta in sorted(self._meta.items()):
            origin = filters.get("origin")
            if origin and origin not in (meta.get("origins") or []):
                continue
            target = filters.get("target_version")
            if target and str(meta.get("target_version", meta.get("version", ""))) != target:
                continue
            out.append(uid)
        return out

    def get_update(self, update_id: str) -> dict[str, Any]:
        """The registered metadata as given."""
        meta = self._meta.get(update_id)
        if meta is None:
            raise NotFound(f"update {update_id} is not registered")
        return meta

    def register_update(self, metadata: dict[str, Any]) -> None:
        """Store the metadata (the spec's fields); an optional `package` object names the file,
        its SHA-256, the install name and the post-install script."""
        uid = metadata["id"]
        try:
            rules.check_registration(metadata, self.package_dirs)
        except RuleError as exc:
            raise InvalidInput(str(exc)) from None
        with self._lock:
            if uid in self._meta:
                raise AlreadyExists(f"update {uid} is already registered")
            self._meta[uid] = metadata
            try:
                self._save()
            except BaseException:  # not stored: not registered either
                del self._meta[uid]
                raise

    def delete_update(self, update_id: str) -> None:
        """Forget the package and its staging directory (an installed tree stays)."""
        with self._lock:
            meta = self._meta.pop(update_id, None)
            if meta is None:
                raise NotFound(f"update {update_id} is not registered")
            try:
                self._save()
            except BaseException:  # still on disk: still registered
                self._meta[update_id] = meta
                raise
        shutil.rmtree(self.staging / update_id, ignore_errors=True)

    def supports_automated(self, update_id: str) -> bool:
        """Automated mode unless the registration says `automated: false`."""
        return bool(self.get_update(update_id).get("automated", True))

    def prepare(self, update_id: str, reporter: Any) -> None:
        """Verify the SHA-256 and unpack into the staging directory (within the limits)."""
        pkg = self.get_update(update_id).get("package")
        if pkg is None:  # a registration of the spec's fields alone: nothing to install
            reporter.set_sub_progress([{"name": METADATA_ONLY, "progress": 100}])
            reporter.set_progress(100)
            return
        path = self._package_file(pkg)
        reporter.set_sub_progress([{"name": "verify", "progress": 0},
                                   {"name": "unpack", "progress": 0}])
        staged = self.staging / update_id
        try:
            package.verify(path, pkg["sha256"],
                           lambda f: reporter.set_progress(int(f * 60)))
            reporter.set_sub_progress([{"name": "verify", "progress": 100},
                                       {"name": "unpack", "progress": 0}])
            with self._writing(self.staging):
                self.staging.mkdir(parents=True, exist_ok=True)
                package.unpack(path, staged, self.limits)
        except PackageError as exc:
            _remove(staged)
            raise PluginError(str(exc), 400) from None
        except BaseException:
            _remove(staged)
            raise
        reporter.set_sub_progress([{"name": "verify", "progress": 100},
                                   {"name": "unpack", "progress": 100}])
        reporter.set_progress(100)

    def execute(self, update_id: str, reporter: Any) -> None:
        """Move the staged tree into a release directory and swap the install link to it."""
        meta = self.get_update(update_id)
        pkg = meta.get("package")
        if pkg is None:  # metadata only: nothing to swap in
            reporter.set_sub_progress([{"name": METADATA_ONLY, "progress": 100}])
            reporter.set_progress(100)
            return
        staged = self.staging / update_id
        if not staged.is_dir():
            raise PluginError(f"update {update_id} has no staged tree; prepare it again", 409)
        name = str(pkg.get("install_as") or update_id)
        releases = self.install_root / ".releases" / name
        with self._writing(releases):
            releases.mkdir(parents=True, exist_ok=True)
        release = releases / f"{update_id}-{time.time_ns()}"
        try:
            with self._writing(releases):
                shutil.move(str(staged), release)
        except BaseException:
            _remove(staged)
            _remove(release)
            raise
        release.chmod(0o755)  # installed software, not gateway state
        reporter.set_progress(40)
        link = self.install_root / name
        try:
            previous = package.swap_link(link, release)
        except PackageError as exc:
            _remove(release)
            raise PluginError(str(exc), 409) from None
        reporter.set_progress(70)
        script = pkg.get("post_install")
        if script:
            env = {"UPDATE_ID": update_id, "INSTALL_DIR": str(link), "RELEASE_DIR": str(release)}
            try:
                package.run_script(release, rules.hook_path(script), env,
                                   self.post_install_timeout_s)
            except (PackageError, RuleError) as exc:
                if previous is not None:  # roll back to the tree that worked
                    package.swap_link(link, previous)
                else:
                    link.unlink()
                _remove(release)
                back = ("the previous installation is back in place" if previous is not None
                        else "nothing is installed")
                raise PluginError(f"{exc}; {back}", 500) from None
        self._prune(releases, release)
        reporter.set_progress(100)

    # helpers --------------------------------------------------------------------------------
    def _package_file(self, pkg: dict[str, Any]) -> Path:
        if isinstance(pkg.get("path"), str):
            try:  # checked again: package_dirs may have changed since the registration
                return rules.allowed_path(pkg["path"], self.package_dirs)
            except RuleError as exc:
                raise PluginError(str(exc), 400) from None
        ref = str(pkg["bulk_data"])
        m = BULK_URI.match(ref if "bulk-data/" in ref else f"bulk-data/{ref}")
        found = self.ctx.bulk_data_file(m.group(1), m.group(2)) if m and self.ctx else None
        if found is None:
            raise PluginError(f"bulk-data file {ref!r} not found (upload it first)", 404)
        return found

    def _prune(self, releases: Path, keep: Path) -> None:
        """Remove old releases of one install name (its own directory: exact identity)."""
        older = sorted((p for p in releases.iterdir() if p != keep),
                       key=lambda p: p.stat().st_mtime, reverse=True)
        for old in older[KEEP_RELEASES - 1:]:
            _remove(old)


def _number(config: dict[str, Any], key: str, default: float, low: float,
            high: float) -> float:
    """A numeric plugin setting within [low, high]; ValueError naming the setting."""
    value = config.get(key, default)
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or not low <= number <= high:
        raise ValueError(f"setting 'plugins.update_provider.{key}' must be a number from "
                         f"{low:g} to {high:g}; got {value!r}")
    return number


def _remove(path: Path) -> None:
    """Remove a file, link or tree if present."""
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    elif path.exists():
        shutil.rmtree(path, ignore_errors=True)
