"""The first-party update provider plugin: packages from bulk-data or a path, staged, swapped."""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from ..plugins.api import UPDATES, AlreadyExists, InvalidInput, NotFound, Plugin, PluginError
from ..plugins.context import PluginContext
from . import package
from .package import PackageError

SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
BULK_URI = re.compile(r"^(?:/api/v1/[^?]*/)?bulk-data/([A-Za-z0-9_-]+)/([^/?]+)$")
KEEP_RELEASES = 2


def _state_dir(ctx: PluginContext | None) -> Path:
    from ..faults.store import default_state_dir

    configured = ctx.settings["state_dir"] if ctx is not None else ""
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
        """Settings: install_root, staging_dir, post_install_timeout_sec, package_dirs."""
        self.config = dict(config)
        timeout = float(self.config.get("post_install_timeout_sec", 300))
        if not timeout > 0:
            raise ValueError("plugins.update_provider.post_install_timeout_sec must be > 0")
        self.post_install_timeout_s = timeout

    def set_context(self, ctx: PluginContext) -> None:
        """Resolve the directories (default below the gateway's state directory)."""
        self.ctx = ctx
        self.root = _state_dir(ctx) / "updates"
        self.staging = Path(self.config.get("staging_dir") or self.root / "staging").expanduser()
        self.install_root = Path(self.config.get("install_root")
                                 or self.root / "installed").expanduser()
        for d in (self.root, self.staging, self.install_root / ".releases"):
            d.mkdir(parents=True, exist_ok=True)
        index = self.root / "registry.json"
        if index.is_file():
            self._meta = json.loads(index.read_text())

    def providers(self) -> dict[str, Any]:
        """This plugin is an update provider."""
        return {UPDATES: self}

    def _save(self) -> None:
        index = self.root / "registry.json"
        tmp = index.with_suffix(".tmp")
        tmp.write_text(json.dumps(self._meta))
        os.replace(tmp, index)

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
        """Store the metadata; the `package` object names the file and its SHA-256."""
        uid = metadata["id"]
        pkg = metadata.get("package")
        if not isinstance(pkg, dict):
            raise InvalidInput("field 'package' must be an object with 'sha256' and 'path' or "
                               "'bulk_data'")
        if not isinstance(pkg.get("sha256"), str) or not SHA256.match(pkg["sha256"]):
            raise InvalidInput("field 'package.sha256' must be 64 hex digits")
        if not (isinstance(pkg.get("path"), str) or isinstance(pkg.get("bulk_data"), str)):
            raise InvalidInput("field 'package' needs 'path' (a file on the robot) or "
                               "'bulk_data' (an uploaded file: '<category>/<id>' or its URI)")
        name = str(pkg.get("install_as") or uid)
        if not NAME.match(name) or name.startswith("."):
            raise InvalidInput("field 'package.install_as' must be a plain file name")
        with self._lock:
            if uid in self._meta:
                raise AlreadyExists(f"update {uid} is already registered")
            self._meta[uid] = metadata
            self._save()

    def delete_update(self, update_id: str) -> None:
        """Forget the package and its staging directory (an installed tree stays)."""
        with self._lock:
            if self._meta.pop(update_id, None) is None:
                raise NotFound(f"update {update_id} is not registered")
            self._save()
        shutil.rmtree(self.staging / update_id, ignore_errors=True)

    def supports_automated(self, update_id: str) -> bool:
        """Automated mode unless the registration says `automated: false`."""
        return bool(self.get_update(update_id).get("automated", True))

    def prepare(self, update_id: str, reporter: Any) -> None:
        """Verify the SHA-256 and unpack into the staging directory."""
        pkg = self.get_update(update_id)["package"]
        path = self._package_file(pkg)
        reporter.set_sub_progress([{"name": "verify", "progress": 0},
                                   {"name": "unpack", "progress": 0}])
        try:
            package.verify(path, pkg["sha256"],
                           lambda f: reporter.set_progress(int(f * 60)))
            reporter.set_sub_progress([{"name": "verify", "progress": 100},
                                       {"name": "unpack", "progress": 0}])
            package.unpack(path, self.staging / update_id)
        except PackageError as exc:
            shutil.rmtree(self.staging / update_id, ignore_errors=True)
            raise PluginError(str(exc), 400) from None
        reporter.set_sub_progress([{"name": "verify", "progress": 100},
                                   {"name": "unpack", "progress": 100}])
        reporter.set_progress(100)

    def execute(self, update_id: str, reporter: Any) -> None:
        """Move the staged tree into a release directory and swap the install link to it."""
        meta = self.get_update(update_id)
        pkg = meta["package"]
        staged = self.staging / update_id
        if not staged.is_dir():
            raise PluginError(f"update {update_id} has no staged tree; prepare it again", 409)
        name = str(pkg.get("install_as") or update_id)
        release = self.install_root / ".releases" / f"{name}-{update_id}-{time.time_ns()}"
        shutil.move(str(staged), release)
        reporter.set_progress(40)
        link = self.install_root / name
        try:
            previous = package.swap_link(link, release)
        except PackageError as exc:
            raise PluginError(str(exc), 409) from None
        reporter.set_progress(70)
        script = pkg.get("post_install")
        if script:
            env = {"UPDATE_ID": update_id, "INSTALL_DIR": str(link), "RELEASE_DIR": str(release)}
            try:
                package.run_script(release / str(script), release, env,
                                   self.post_install_timeout_s)
            except PackageError as exc:
                if previous is not None:  # roll back to the tree that worked
                    package.swap_link(link, previous)
                else:
                    link.unlink()
                raise PluginError(f"{exc}; the previous installation is back in place",
                                  500) from None
        self._prune(name, release)
        reporter.set_progress(100)

    # helpers --------------------------------------------------------------------------------
    def _package_file(self, pkg: dict[str, Any]) -> Path:
        if isinstance(pkg.get("path"), str):
            path = Path(pkg["path"]).expanduser()
            allowed = [Path(d).expanduser().resolve() for d in self.config.get("package_dirs")
                       or []]
            if allowed and not any(d in path.resolve().parents for d in allowed):
                raise PluginError(f"package path {path} is outside the allowed package_dirs",
                                  400)
            return path
        ref = str(pkg["bulk_data"])
        m = BULK_URI.match(ref if "bulk-data/" in ref else f"bulk-data/{ref}")
        found = self.ctx.bulk_data_file(m.group(1), m.group(2)) if m and self.ctx else None
        if found is None:
            raise PluginError(f"bulk-data file {ref!r} not found (upload it first)", 404)
        return found

    def _prune(self, name: str, keep: Path) -> None:
        releases = sorted((p for p in (self.install_root / ".releases").glob(f"{name}-*")
                           if p != keep), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in releases[KEEP_RELEASES - 1:]:
            shutil.rmtree(old, ignore_errors=True)
