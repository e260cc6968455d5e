"""A small tmpfs for storage-exhaustion tests: mount, fill, free, unmount (root only)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

FILLER = ".filler"
CHUNK = 4096


@contextmanager
def small_tmpfs(directory: Path, size: str = "2m") -> Iterator[Path]:
    """A tmpfs of `size` mounted on directory for the block; skips the test when this process
    may not mount one (not root, no mount(8), mount refused)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    directory.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs",
                               str(directory)], capture_output=True, text=True, timeout=30,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot mount a tmpfs: {exc}")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.strip() or done.returncode}")
    try:
        yield directory
    finally:
        if subprocess.run(["umount", str(directory)], capture_output=True, timeout=30,
                          check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(directory)], capture_output=True, timeout=30,
                           check=False)


def fill(directory: Path) -> Path:
    """Write a filler file until the file system is full; its path."""
    path = directory / FILLER
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    block = bytes(CHUNK)
    try:
        while True:
            os.write(fd, block)
    except OSError as exc:
        if exc.errno != 28:  # ENOSPC
            raise
    finally:
        os.close(fd)
    for tail in (512, 64, 1):  # what a page-sized write left over
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            while True:
                os.write(fd, bytes(tail))
        except OSError:
            pass
        finally:
            os.close(fd)
    return path


def free(directory: Path) -> None:
    """Remove the filler: the space is back."""
    (directory / FILLER).unlink(missing_ok=True)


def free_bytes(directory: Path) -> int:
    """Bytes still free on the file system of directory."""
    st = os.statvfs(directory)
    return st.f_bavail * st.f_frsize


def remount(directory: Path, mode: str) -> None:
    """Remount the tmpfs read-only ("ro") or writable ("rw")."""
    subprocess.run(["mount", "-o", f"remount,{mode}", str(directory)], check=True,
                   capture_output=True, timeout=30)
