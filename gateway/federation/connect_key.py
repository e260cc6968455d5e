"""The primary's robot key: the secret it issues robots' own connect tokens from.

`aggregation.connect_robot_secret` (or its `_file` twin) when set; else a random key the
primary makes once and keeps in `<state_dir>/federation/connect_robot_key` (0600 in a 0700
directory). It is never the shared `aggregation.connect_token`, so holding the shared token
issues no robot's token. A primary makes the key when it accepts robot connections
(`aggregation.connect_token` or `connect_robots` set); `diag-gateway robot-token` makes it
when it issues the first token.
"""

from __future__ import annotations

import logging
import os
import secrets
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from ..process.settings import ProcessSettings
from ..process.statefiles import default_state_dir
from ..settings.config import ConfigError
from .settings import AggregationSettings

if TYPE_CHECKING:
    from ..settings.config import Settings

log = logging.getLogger(__name__)

ROBOT_SECRET_MIN = 16
KEY_DIR, KEY_FILE = "federation", "connect_robot_key"
KEY_BYTES = 32
MAX_KEY_FILE_BYTES = 4096


def key_path(state_dir: str) -> Path:
    """Where the made robot key lives below the state directory."""
    base = Path(state_dir).expanduser() if state_dir else default_state_dir()
    return base / KEY_DIR / KEY_FILE


def _read(path: Path) -> str:
    """The key in `path` (no links followed); ConfigError when it is unusable."""
    where = "setting 'state_dir'"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read the robot key {path}: {exc.strerror}"
                          ) from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        raw = f.read(MAX_KEY_FILE_BYTES)
    key = raw.decode("ascii", "replace").strip()
    if len(key) < 2 * KEY_BYTES:
        raise ConfigError(f"{where}: the robot key {path} is damaged (shorter than "
                          f"{2 * KEY_BYTES} characters); remove it to make a new one (every "
                          "issued robot token changes) or set aggregation.connect_robot_secret")
    if st.st_mode & 0o077 or st.st_uid != os.geteuid():
        log.warning("%s: the robot key %s is readable by others or not this user's (mode %o);"
                    " chmod 600 it", where, path, stat.S_IMODE(st.st_mode))
    return key


def _make(path: Path) -> str:
    """A new random key written to `path` (0600); the existing one if another process won."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
    except FileExistsError:
        return _read(path)
    except OSError as exc:
        raise ConfigError(f"setting 'state_dir': cannot make the robot key {path} "
                          f"({exc.strerror}); set aggregation.connect_robot_secret instead"
                          ) from None
    key = secrets.token_hex(KEY_BYTES)
    with os.fdopen(fd, "w") as f:
        f.write(key + "\n")
        f.flush()
        os.fsync(f.fileno())
    log.info("made the robot key %s: robots' connect tokens are issued from it "
             "(diag-gateway robot-token NAME)", path)
    return key


def robot_key(s: Settings, create: bool = False) -> str:
    """The robot key of a primary with settings `s`: the setting, else the key file (made
    when robot connections are accepted or `create`); "" when there is none."""
    a = s.typed(AggregationSettings.from_settings)
    configured = a.connect_robot_secret
    if configured:
        if len(configured) < ROBOT_SECRET_MIN:
            raise ConfigError("setting 'aggregation.connect_robot_secret': shorter than "
                              f"{ROBOT_SECRET_MIN} characters; use a long random secret")
        return configured
    path = key_path(s.typed(ProcessSettings.from_settings).state_dir)
    if os.path.lexists(path):
        return _read(path)
    if create or a.connect_token or a.connect_robots:
        return _make(path)
    return ""
