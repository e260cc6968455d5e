"""Checks of the update provider (pure): registration bodies, allowed package paths, hooks."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
BULK_URI = re.compile(r"^(?:/api/v1/[^?]*/)?bulk-data/([A-Za-z0-9_-]+)/([^/?]+)$")
# Registration fields of the spec (interface.md, "Update package"), with their JSON types.
SPEC_FIELDS: dict[str, type | tuple[type, ...]] = {
    "update_name": str, "automated": bool, "origins": list, "duration": (int, float),
    "size": (int, float), "updated_components": list, "affected_components": list,
}
REDACTED = "[redacted]"


class RuleError(Exception):
    """A registration or package the provider refuses; the message says why."""


def check_registration(meta: dict[str, Any], package_dirs: Iterable[str]) -> None:
    """RuleError naming the first bad field of a registration body."""
    for key, typ in SPEC_FIELDS.items():
        value = meta.get(key)
        if value is None:
            continue
        if isinstance(value, bool) and typ is not bool:
            raise RuleError(f"field '{key}' must be a {_type_word(typ)}")
        if not isinstance(value, typ):
            raise RuleError(f"field '{key}' must be a {_type_word(typ)}")
    pkg = meta.get("package")
    if pkg is None:
        return  # metadata only: prepare and execute install nothing
    if not isinstance(pkg, dict):
        raise RuleError("field 'package' must be an object with 'sha256' and 'path' or "
                        "'bulk_data'")
    if not isinstance(pkg.get("sha256"), str) or not SHA256.match(pkg["sha256"]):
        raise RuleError("field 'package.sha256' must be 64 hex digits")
    if isinstance(pkg.get("path"), str):
        allowed_path(pkg["path"], package_dirs)
    elif not isinstance(pkg.get("bulk_data"), str):
        raise RuleError("field 'package' needs 'path' (a file on the robot, under "
                        "plugins.update_provider.package_dirs) or 'bulk_data' (an uploaded "
                        "file: '<category>/<id>' or its URI)")
    name = str(pkg.get("install_as") or meta["id"])
    if not NAME.match(name) or name.startswith("."):
        raise RuleError("field 'package.install_as' must be a plain file name")
    if pkg.get("post_install") is not None:
        hook_path(pkg["post_install"])


def _type_word(typ: type | tuple[type, ...]) -> str:
    words = {str: "string", bool: "boolean", list: "array", int: "number", float: "number"}
    types = typ if isinstance(typ, tuple) else (typ,)
    return words[types[0]]


def allowed_path(path: str, package_dirs: Iterable[str]) -> Path:
    """The resolved package file when it lies under one of package_dirs; RuleError otherwise."""
    dirs = [Path(d).expanduser().resolve() for d in package_dirs if str(d).strip()]
    if not dirs:
        raise RuleError("field 'package.path' is refused: no directory is allowed for "
                        "package files (setting plugins.update_provider.package_dirs is "
                        "empty); upload the package as bulk-data or configure package_dirs")
    resolved = Path(path).expanduser().resolve()
    if not any(d in resolved.parents for d in dirs):
        raise RuleError(f"field 'package.path' is refused: {path} is not under "
                        f"plugins.update_provider.package_dirs "
                        f"({', '.join(str(d) for d in dirs)})")
    return resolved


def hook_path(value: Any) -> PurePosixPath:
    """The post-install script as a relative path inside the package; RuleError otherwise."""
    if not isinstance(value, str) or not value.strip():
        raise RuleError("field 'package.post_install' must be a path inside the package")
    rel = PurePosixPath(value)
    if rel.is_absolute() or ".." in rel.parts or "\\" in value or "\0" in value:
        raise RuleError(f"field 'package.post_install' must be a path inside the package "
                        f"(relative, without '..'); got {value!r}")
    return rel


def hook_inside(release: Path, rel: PurePosixPath) -> Path:
    """The script file of rel in release, symlinks resolved; RuleError when it leaves it."""
    root = release.resolve()
    script = (root / rel).resolve()
    if root not in script.parents:
        raise RuleError(f"post-install script {rel} resolves outside the package")
    return script


def redact(text: str, secrets: Iterable[str]) -> str:
    """text with every secret value replaced by [redacted]."""
    for secret in sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def expansion_refusal(total: int, archive_size: int, members: int, max_bytes: int,
                      max_ratio: float, max_members: int) -> str | None:
    """Why an archive of this unpacked size and member count is refused, or None."""
    if members > max_members:
        return (f"the archive has more than {max_members} members; the limit is "
                f"{max_members}")
    if total > max_bytes:
        return (f"the archive unpacks to {total} bytes; the limit is {max_bytes} "
                "(setting plugins.update_provider.max_unpacked_bytes)")
    ratio = total / max(archive_size, 1)
    if ratio > max_ratio:
        return (f"the archive unpacks to {ratio:.0f} times its size; the limit is "
                f"{max_ratio:g} (setting plugins.update_provider.max_expansion_ratio)")
    return None
