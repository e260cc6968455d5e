"""Secrets from files, and out of the process's command line and environment.

Each secret setting `<key>` has a `<key>_file` twin naming a file that holds the value (a
trailing newline is dropped; for `auth.clients` one entry per line). A secret given on the
command line (`--set auth.jwt_secret=...`) or found in the environment is blanked in the
process's own argument and environment memory once read, so `/proc/<pid>/cmdline` and
`/proc/<pid>/environ` no longer show it, and dropped from `os.environ`.
"""

from __future__ import annotations

import ctypes
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

SUFFIX = "_file"
MAX_SECRET_FILE_BYTES = 1 << 20


class SecretFileError(ValueError):
    """A secret file that cannot be used; the message names the setting."""


def file_key(key: str) -> str:
    """The `<key>_file` twin of a secret setting."""
    return key + SUFFIX


def read_secret_files(values: Mapping[str, Any], secret_keys: Iterable[str]) -> dict[str, Any]:
    """{secret key: raw value read from its `_file` twin} for every twin that is set."""
    out: dict[str, Any] = {}
    for key in secret_keys:
        path = values.get(file_key(key))
        if not path:
            continue
        where = f"setting '{file_key(key)}'"
        try:
            p = Path(str(path)).expanduser()
            if p.stat().st_size > MAX_SECRET_FILE_BYTES:
                raise SecretFileError(f"{where}: {p} is larger than {MAX_SECRET_FILE_BYTES} "
                                      "bytes")
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise SecretFileError(f"{where}: cannot read {path}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise SecretFileError(f"{where}: {path} is not UTF-8 text") from None
        if values.get(key):
            log.warning("settings '%s' and '%s' are both set; the file wins", key, file_key(key))
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        out[key] = tuple(lines) if isinstance(values.get(key), tuple) else text.rstrip("\r\n")
        try:
            mode = p.stat().st_mode
        except OSError:
            mode = 0
        if mode & 0o077:
            log.warning("%s: %s is readable by others (mode %o); chmod 600 it", where, p,
                        mode & 0o777)
    return out


def _regions() -> list[tuple[int, int]]:
    """(start, end) of this process's argument and environment memory."""
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    # /proc/<pid>/stat fields 48-51 (arg_start, arg_end, env_start, env_end); index 0 is field 3
    return [(int(fields[45]), int(fields[46])), (int(fields[47]), int(fields[48]))]


def scrub_process(secrets: Iterable[str]) -> int:
    """Blank every secret in /proc/self/cmdline and /proc/self/environ and drop environment
    variables that hold one; how many places were blanked (never raises)."""
    needles = sorted({s.encode() for s in secrets if len(s) >= 4}, key=len, reverse=True)
    if not needles:
        return 0
    for name, value in list(os.environ.items()):
        if any(n.decode() in value for n in needles):
            os.environ.pop(name, None)
    count = 0
    try:
        regions = _regions()
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            for start, end in regions:
                if end <= start:
                    continue
                mem.seek(start)
                data = bytearray(mem.read(end - start))
                for needle in needles:
                    i = data.find(needle)
                    while i >= 0:
                        data[i:i + len(needle)] = b"*" * len(needle)
                        count += 1
                        i = data.find(needle, i + len(needle))
                if count:
                    mem.seek(start)
                    mem.write(bytes(data))
    except (OSError, ValueError, IndexError) as exc:
        log.warning("cannot blank secrets in this process's command line and environment "
                    "(%s): give them with the *_file settings instead", exc)
        return count
    if count:
        log.warning("secret settings were given on the command line or in the environment: "
                    "blanked in /proc/%d (%d places); the *_file settings keep them off both",
                    os.getpid(), count)
    return count


def forbid_inspection() -> bool:
    """PR_SET_DUMPABLE 0: processes of the gateway's own (non-root) user can no longer read its
    /proc files (environ, mem, fd) or attach to it; root still can. False if not applied."""
    pr_set_dumpable = 4
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(pr_set_dumpable, 0, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False
