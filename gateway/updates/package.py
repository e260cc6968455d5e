"""Update package files: SHA-256 check, safe unpacking, atomic swap, post-install script."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

CHUNK = 1 << 20


class PackageError(Exception):
    """A package that cannot be verified, unpacked or installed; the message says why."""


def sha256_file(path: Path, progress: Callable[[float], None] | None = None) -> str:
    """Hex SHA-256 of a file; progress(fraction) after each chunk."""
    size = max(path.stat().st_size, 1)
    digest = hashlib.sha256()
    done = 0
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
            done += len(chunk)
            if progress is not None:
                progress(done / size)
    return digest.hexdigest()


def verify(path: Path, expected: str, progress: Callable[[float], None] | None = None) -> None:
    """PackageError unless the file's SHA-256 equals expected (hex, any case)."""
    if not path.is_file():
        raise PackageError(f"package file {path} does not exist")
    actual = sha256_file(path, progress)
    if actual != expected.strip().lower():
        raise PackageError(f"SHA-256 mismatch for {path.name}: expected {expected.lower()}, "
                           f"got {actual}; the package was refused")


def _inside(root: Path, name: str) -> bool:
    target = (root / name).resolve()
    return target == root or root in target.parents


def unpack(archive: Path, dest: Path) -> list[str]:
    """Unpack a tar (any compression) or zip archive into dest (replaced); a file that is
    neither is copied as is. Refuses members leaving dest. Returns the top-level names."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    root = dest.resolve()
    if tarfile.is_tarfile(archive):
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                if not _inside(root, member.name) or member.isdev():
                    raise PackageError(f"archive member {member.name!r} is refused (it would "
                                       "leave the staging directory or is a device)")
            tar.extractall(dest, filter="data")
    elif zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for name in zf.namelist():
                if not _inside(root, name):
                    raise PackageError(f"archive member {name!r} would leave the staging "
                                       "directory")
            zf.extractall(dest)
    else:
        shutil.copy2(archive, dest / archive.name)
    return sorted(p.name for p in dest.iterdir())


def swap_link(link: Path, target: Path) -> Path | None:
    """Point the symlink `link` at target in one rename; returns the previous target."""
    previous: Path | None = None
    if link.is_symlink():
        previous = Path(os.readlink(link))
    elif link.exists():
        raise PackageError(f"install path {link} exists and is not a symlink this provider "
                           "manages; move it away first")
    tmp = link.with_name(f".{link.name}.swap-{os.getpid()}")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(target, tmp)
    os.replace(tmp, link)  # atomic: readers see the old or the new tree, never neither
    return previous


def run_script(script: Path, cwd: Path, env: dict[str, str], timeout_s: float) -> str:
    """Run a post-install script; PackageError on a non-zero exit or timeout."""
    if not script.is_file():
        raise PackageError(f"post-install script {script.name} is not in the package")
    cmd = [str(script)] if os.access(script, os.X_OK) else ["sh", str(script)]
    if script.suffix == ".py":
        cmd = ["python3", str(script)]
    try:
        done = subprocess.run(cmd, cwd=cwd, env={**os.environ, **env}, capture_output=True,
                              timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise PackageError(f"post-install script {script.name} did not finish within "
                           f"{timeout_s:g} s") from None
    output = (done.stdout + done.stderr).decode(errors="replace").strip()
    if done.returncode != 0:
        raise PackageError(f"post-install script {script.name} exited with "
                           f"{done.returncode}: {output[-300:]}")
    return output
