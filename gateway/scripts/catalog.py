"""Script catalog: managed scripts from a directory, uploads on disk, parameters, environment."""

from __future__ import annotations

import fnmatch
import json
import os
import pwd
import re
import shutil
import stat
import sys
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..auth.settings import AuthSettings
from ..process.statefiles import default_state_dir
from ..process.storage import StorageHealth
from ..schemacheck import safeschema
from ..settings.safeyaml import BoundedSafeLoader
from .childenv import scrubbed_env as scrubbed_env  # re-exported (tests, older callers)

# File extension -> format; format -> interpreter (python runs with the gateway's own python3).
FORMATS = {".sh": "sh", ".bash": "bash", ".py": "python"}
INTERPRETERS = {"sh": "sh", "bash": "bash", "python": sys.executable}
META_SUFFIXES = (".json", ".yaml", ".yml")
MAX_SIDECAR_BYTES = 262144
STORE = "scripts"  # the upload store's name in storage health and 507 messages
_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


class ScriptError(ValueError):
    """A script definition or request that cannot be used; the message says why."""


@dataclass
class Script:
    """One runnable script: managed (predefined) or uploaded to one entity."""

    id: str
    name: str
    path: Path
    format: str
    managed: bool
    description: str = ""
    timeout_sec: float | None = None
    entity_filter: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    args: list[dict[str, Any]] = field(default_factory=list)
    parameters_schema: dict[str, Any] | None = None
    owner: tuple[str, str] | None = None  # (kind, entity_id) of an upload

    def applies_to(self, kind: str, entity_id: str) -> bool:
        """Whether the script is offered on an entity."""
        if self.owner is not None:
            return self.owner == (kind, entity_id)
        if not self.entity_filter:
            return True
        return any(fnmatch.fnmatchcase(f"{kind}/{entity_id}", g) for g in self.entity_filter)

    def describe(self) -> dict[str, Any]:
        """The API body: id, name, description, managed, parameters_schema when present."""
        out: dict[str, Any] = {"id": self.id, "name": self.name,
                               "description": self.description, "managed": self.managed}
        if self.parameters_schema is not None:
            out["parameters_schema"] = self.parameters_schema
        return out


def anonymous_callers(settings: Any) -> bool:
    """Whether callers without a token reach the write routes (auth off, or required for none)."""
    auth = settings.typed(AuthSettings.from_settings)
    return not auth.enabled or auth.require_auth_for == "none"


ANONYMOUS_REFUSED = ("Scripts cannot be uploaded or run anonymously: turn on auth (auth.enabled) "
                     "or set scripts.allow_anonymous=true to let anyone who reaches this "
                     "gateway run code on it")


def check_schema(schema: Any) -> dict[str, Any]:
    """A usable JSON Schema (local refs only, bounded), or ScriptError naming the problem."""
    try:
        return safeschema.check(schema, "parameters_schema")
    except safeschema.SchemaRefused as exc:
        raise ScriptError(str(exc)) from None


def validate_parameters(schema: dict[str, Any] | None, parameters: Any) -> list[str]:
    """Problems of parameters against the script's schema (empty: valid); nothing is fetched."""
    return safeschema.problems(schema, parameters)


def _meta(path: Path) -> dict[str, Any]:
    for suffix in META_SUFFIXES:
        side = path.with_suffix(suffix)
        if side.is_file():
            try:
                if side.stat().st_size > MAX_SIDECAR_BYTES:
                    raise ScriptError(f"{side}: script metadata is larger than "
                                      f"{MAX_SIDECAR_BYTES} bytes")
                # bounded loader: nesting and alias expansion capped (no YAML bombs)
                data = yaml.load(side.read_text(encoding="utf-8"),
                                 Loader=BoundedSafeLoader) or {}
            except (OSError, yaml.YAMLError) as exc:
                raise ScriptError(f"{side}: cannot read script metadata: {exc}") from None
            if not isinstance(data, dict):
                raise ScriptError(f"{side}: script metadata must be a mapping")
            return data
    return {}


def managed_from(meta: Mapping[str, Any], path: Path, default_id: str) -> Script:
    """A managed script from its definition (directory sidecar or manifest entry)."""
    fmt = meta.get("format") or FORMATS.get(path.suffix)
    if fmt not in INTERPRETERS:
        raise ScriptError(f"{path}: format must be sh, bash or python")
    sid = str(meta.get("id") or default_id)
    if not _ID.match(sid):
        raise ScriptError(f"{path}: script id {sid!r} may hold only letters, digits, '_', '-'")
    schema = meta.get("parameters_schema")
    timeout = meta.get("timeout_sec")
    if timeout is not None and (not isinstance(timeout, (int, float)) or timeout < 1):
        raise ScriptError(f"{path}: timeout_sec must be a number >= 1")
    return Script(
        id=sid, name=str(meta.get("name") or sid), path=path, format=str(fmt), managed=True,
        description=str(meta.get("description") or ""),
        timeout_sec=float(timeout) if timeout is not None else None,
        entity_filter=tuple(str(g) for g in meta.get("entity_filter") or ()),
        env={str(k): str(v) for k, v in (meta.get("env") or {}).items()},
        args=[dict(a) for a in meta.get("args") or () if isinstance(a, Mapping)],
        parameters_schema=check_schema(schema) if schema is not None else None)


def scan_managed(directory: Path) -> tuple[list[Script], list[str]]:
    """Managed scripts of a directory (top-level .sh/.bash/.py files) and per-file problems."""
    scripts: list[Script] = []
    problems: list[str] = []
    if not directory.is_dir():
        return scripts, [f"{directory}: not a directory"]
    for path in sorted(directory.iterdir()):
        if not path.is_file() or path.suffix not in FORMATS:
            continue
        try:
            scripts.append(managed_from(_meta(path), path.resolve(), path.stem))
        except ScriptError as exc:
            problems.append(str(exc))
    return scripts, problems


class UploadStore:
    """Uploaded scripts: `<root>/<kind>/<entity_id>/<script_id>/{script.<ext>, meta.json}`."""

    def __init__(self, root: Path, run_gid: int | None = None,
                 storage: StorageHealth | None = None) -> None:
        self.root = root
        self.run_gid = run_gid  # the run user's group reads uploads (upload_access)
        self.storage = storage or StorageHealth()  # a failed write: 507 and /health degraded

    def load(self) -> list[Script]:
        """Every stored upload (unreadable entries are skipped)."""
        out: list[Script] = []
        self.storage.check(STORE, self.root)  # a full disk at start: /health says so at once
        for meta_path in sorted(self.root.glob("*/*/*/meta.json")):
            try:
                meta = json.loads(meta_path.read_text(encoding="utf-8"))
                out.append(self._script(meta_path.parent, meta))
            except (OSError, ValueError, KeyError, ScriptError):
                continue
        return out

    def _script(self, folder: Path, meta: dict[str, Any]) -> Script:
        ext = meta["extension"]
        return Script(id=meta["id"], name=meta["name"], path=folder / f"script{ext}",
                      format=FORMATS[ext], managed=False, description=meta.get("description", ""),
                      parameters_schema=(check_schema(meta["parameters_schema"])
                                         if meta.get("parameters_schema") is not None else None),
                      owner=(meta["kind"], meta["entity_id"]))

    def save(self, kind: str, entity_id: str, filename: str, content: bytes,
             meta: Mapping[str, Any]) -> Script:
        """Write an upload (whole or nothing) and return its script."""
        ext = Path(filename).suffix
        sid = f"script_{uuid.uuid4().hex[:12]}"
        record = {"id": sid, "name": str(meta.get("name") or Path(filename).stem),
                  "description": str(meta.get("description") or ""), "extension": ext,
                  "kind": kind, "entity_id": entity_id, "filename": filename}
        if meta.get("parameters_schema") is not None:
            record["parameters_schema"] = meta["parameters_schema"]
        folder = self.root / kind / entity_id / sid
        tmp = folder.with_name(sid + ".incoming")
        with self.storage.writing(STORE, self.root):
            tmp.mkdir(parents=True)
            try:
                (tmp / f"script{ext}").write_bytes(content)
                (tmp / "meta.json").write_text(json.dumps(record), encoding="utf-8")
                tmp.rename(folder)
                script = self._script(folder, record)
                if self.run_gid is not None:
                    grant(script, self.run_gid)
            except BaseException:  # nothing half stored: the next start would list it
                shutil.rmtree(tmp, ignore_errors=True)
                shutil.rmtree(folder, ignore_errors=True)
                raise
        return script

    def delete(self, script: Script) -> None:
        """Remove an upload's directory."""
        shutil.rmtree(script.path.parent, ignore_errors=True)


def command(script: Script, parameters: Mapping[str, Any], relative: bool = False) -> list[str]:
    """argv: interpreter, script path, then flags of declared args given in parameters.

    `relative`: the path as `./<name>`, opened from the run's working directory (the script's
    folder), so a run user needs no access to the private directories above it.
    """
    path = f"./{script.path.name}" if relative else str(script.path)
    argv = [INTERPRETERS[script.format], path]
    for arg in script.args:
        name = str(arg.get("name"))
        if name not in parameters:
            continue
        value = parameters[name]
        flag = arg.get("flag")
        if arg.get("type") in ("bool", "boolean") or isinstance(value, bool):
            if value and flag:
                argv.append(str(flag))
            continue
        text = value if isinstance(value, str) else json.dumps(value)
        argv.extend([str(flag), text] if flag else [text])
    return argv


def run_env(base: Mapping[str, str], script: Script, parameters: Mapping[str, Any],
            kind: str, entity_id: str, execution_id: str) -> dict[str, str]:
    """The environment of one run: scrubbed base, script env, run context and parameters."""
    env = dict(base)
    env.update(script.env)
    env.update({"DIAG_ENTITY_TYPE": kind, "DIAG_ENTITY_ID": entity_id,
                "DIAG_SCRIPT_ID": script.id, "DIAG_EXECUTION_ID": execution_id,
                "DIAG_SCRIPT_PARAMETERS": json.dumps(parameters)})
    for name, value in parameters.items():
        key = "PARAM_" + re.sub(r"[^A-Za-z0-9]", "_", str(name)).upper()
        env[key] = value if isinstance(value, str) else json.dumps(value)
    env.pop("PYTHONSTARTUP", None)
    return {k: v for k, v in env.items() if "\0" not in k + v}


@dataclass(frozen=True)
class RunAs:
    """How runs switch user: argv prefix, environment, and the run user's group."""

    prefix: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    gid: int | None = None  # None: runs keep the gateway's user


PRIVATE_DIR_MODE, PRIVATE_FILE_MODE = 0o700, 0o600
SHARED_DIR_MODE, SHARED_FILE_MODE = 0o750, 0o640  # group reads, never writes; others nothing


def upload_access(run_gid: int | None) -> tuple[int, int, int | None]:
    """(folder mode, script file mode, group) of an upload: private to the gateway, or, when
    runs switch user, readable (never writable) by the run user's group and by no one else."""
    if run_gid is None:
        return PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, None
    return SHARED_DIR_MODE, SHARED_FILE_MODE, run_gid


def grant(script: Script, run_gid: int | None) -> None:
    """Give an upload's folder and file the modes and group of upload_access (idempotent: the
    state directory is made private again at every start)."""
    dir_mode, file_mode, group = upload_access(run_gid)
    for path, mode in ((script.path.parent, dir_mode), (script.path, file_mode)):
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            raise ScriptError(f"{path} is a symbolic link; not run")
        if group is not None and st.st_gid != group:
            os.lchown(path, -1, group)  # the owner stays the gateway: the run user cannot write
        if stat.S_IMODE(st.st_mode) != mode:
            os.chmod(path, mode)


def root_refusal(enabled: bool, euid: int, run_as_user: str, allow_root: bool) -> str | None:
    """Why a gateway must not start (scripts on, running as root, no run user, root not
    allowed), or None."""
    if not enabled or euid != 0 or run_as_user or allow_root:
        return None
    return ("scripts are enabled (scripts.scripts_dir) and the gateway runs as root: every script "
            "would run as root and could read the gateway's secrets. Set scripts.run_as_user to "
            "an unprivileged user, or scripts.allow_root=true to run them as root anyway")


ROOT_WARNING = ("scripts run as root (scripts.allow_root=true, no scripts.run_as_user): every "
                "script can read the gateway's secrets")


def run_as(user: str) -> RunAs:
    """argv prefix, environment and group that run a script as `user` (name or uid);
    ScriptError naming scripts.run_as_user when that cannot be done."""
    where = f"setting 'scripts.run_as_user': {user!r}"
    try:
        entry = pwd.getpwuid(int(user)) if user.isdigit() else pwd.getpwnam(user)
    except (KeyError, ValueError):
        raise ScriptError(f"{where} is not a user of this host") from None
    if os.geteuid() != 0:
        raise ScriptError(f"{where}: the gateway must run as root to switch users")
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise ScriptError(f"{where}: setpriv (util-linux) is not installed")
    prefix = [setpriv, f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--init-groups",
              "--"]
    env = {"HOME": entry.pw_dir, "USER": entry.pw_name, "LOGNAME": entry.pw_name}
    return RunAs(prefix, env, entry.pw_gid)


def runs_dir(state_dir: str) -> Path:
    """<state_dir>/script-runs: a record per running script, for a restarted gateway."""
    return default_upload_root(state_dir).with_name("script-runs")


def default_upload_root(state_dir: str) -> Path:
    """<state_dir>/scripts (state_dir default as the fault store's)."""
    base = Path(state_dir).expanduser() if state_dir else default_state_dir()
    return base / "scripts"

