"""Update package files: SHA-256 check, safe unpacking, atomic swap, post-install script."""

from __future__ import annotations

import contextlib
import hashlib
import lzma
import os
import shutil
import signal
import subprocess
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..process.statefiles import child_umask
from ..process.storage import INSUFFICIENT, failure_kind
from ..scripts.childenv import child_environment
from ..settings.secret_values import registered_secrets
from . import rules

CHUNK = 1 << 20
MAX_MEMBERS = 100_000  # files and directories of one package


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


@dataclass(frozen=True)
class Limits:
    """Expansion caps of one unpack: total bytes, ratio to the archive, member count."""

    max_bytes: int = 1 << 30
    max_ratio: float = 100.0
    max_members: int = MAX_MEMBERS

    def check(self, total: int, archive_size: int, members: int) -> None:
        """PackageError when an archive of this unpacked size and member count is refused."""
        why = rules.expansion_refusal(total, archive_size, members, self.max_bytes,
                                      self.max_ratio, self.max_members)
        if why is not None:
            raise PackageError(f"the archive is refused: {why}")


def _tar_members(tar: tarfile.TarFile, root: Path, limits: Limits,
                 archive_size: int) -> list[tarfile.TarInfo]:
    """Every member, checked one by one before the next header is read (so a huge member is
    refused before the stream is decompressed past it)."""
    members: list[tarfile.TarInfo] = []
    total = 0
    while (member := tar.next()) is not None:
        members.append(member)
        if member.isdev() or not (member.isfile() or member.isdir() or member.issym()
                                  or member.islnk()):
            raise PackageError(f"archive member {member.name!r} is refused: only files, "
                               "directories and links inside the package are allowed")
        if not _inside(root, member.name):
            raise PackageError(f"archive member {member.name!r} is refused: it would leave "
                               "the staging directory")
        if member.issym() or member.islnk():
            link = member.linkname
            base = PurePosixPath(member.name).parent if member.issym() else PurePosixPath()
            if link.startswith("/") or not _inside(root, str(base / link)):
                raise PackageError(f"archive member {member.name!r} is refused: it links to "
                                   f"{link!r}, outside the package")
        if member.isfile():
            total += member.size
        limits.check(total, archive_size, len(members))
    return members


def unpack(archive: Path, dest: Path, limits: Limits | None = None) -> list[str]:
    """Unpack a tar (any compression) or zip archive into dest (replaced); a file that is
    neither is copied as is. Refuses members leaving dest, links out of it and archives past
    the expansion limits. Returns the top-level names."""
    limits = limits or Limits()
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    root = dest.resolve()
    size = archive.stat().st_size
    try:
        if tarfile.is_tarfile(archive):
            with tarfile.open(archive) as tar:
                members = _tar_members(tar, root, limits, size)
                tar.extractall(dest, members=members, filter="data")
        elif zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                infos = zf.infolist()
                limits.check(sum(i.file_size for i in infos), size, len(infos))
                for info in infos:
                    if not _inside(root, info.filename):
                        raise PackageError(f"archive member {info.filename!r} is refused: it "
                                           "would leave the staging directory")
                zf.extractall(dest)
        else:
            shutil.copy2(archive, dest / archive.name)
    except PackageError:
        raise
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, lzma.LZMAError,
            OSError, ValueError) as exc:
        if isinstance(exc, OSError) and failure_kind(exc) in INSUFFICIENT:
            raise  # a full disk is no fault of the archive (507, not 400)
        raise PackageError(f"the archive cannot be unpacked: {exc}") from None
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


def run_script(release: Path, rel: PurePosixPath, env: dict[str, str], timeout_s: float) -> str:
    """Run the post-install script rel of release, inside it, with the scrubbed environment;
    PackageError (its output redacted of secrets) on a non-zero exit or timeout."""
    try:
        script = rules.hook_inside(release, rel)
    except rules.RuleError as exc:
        raise PackageError(str(exc)) from None
    if not script.is_file():
        raise PackageError(f"post-install script {rel} is not in the package")
    cmd = [str(script)] if os.access(script, os.X_OK) else ["sh", str(script)]
    if script.suffix == ".py":
        cmd = ["python3", str(script)]
    # Own session: a timeout ends the script's whole process group, not only the script.
    with subprocess.Popen(cmd, cwd=release, env={**child_environment(), **env},
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, start_new_session=True,
                          umask=child_umask()) as proc:
        try:
            out, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise PackageError(f"post-install script {rel} did not finish within "
                               f"{timeout_s:g} s") from None
    output = rules.redact(out.decode(errors="replace").strip(), registered_secrets())
    if proc.returncode != 0:
        raise PackageError(f"post-install script {rel} exited with "
                           f"{proc.returncode}: {output[-300:]}")
    return output
