"""An exclusive lock on a directory, so two gateways never share one state directory."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class DirLock:
    """flock on `<directory>/<name>`; the kernel releases it if the process dies."""

    def __init__(self, directory: Path, name: str) -> None:
        self.directory = directory
        self.name = name
        self._fd: int | None = None

    def acquire(self) -> bool:
        """True when this process now owns the directory (the lock file names its pid)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.directory / self.name, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        try:  # the pid is for people: a full disk must not leave the lock held but unowned
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError:
            pass
        return True

    def release(self) -> None:
        """Give the directory up."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
