"""Deferred imports of heavy third-party modules the gateway rarely needs at all.

rclpy imports numpy through its service-introspection messages (`service_msgs`), yet numpy is
used only by messages with fixed-size numeric arrays (e.g. a covariance), which the gateway
builds only when a client sends or reads such a message as Python objects. `defer("numpy")`
puts a stand-in into `sys.modules`: modules that `import numpy` bind it, and the first
attribute read imports the real module (under a lock, from any thread) and copies its names
into the stand-in, so later reads cost a dictionary hit. A module already imported stays.
"""

from __future__ import annotations

import importlib
import sys
import threading
import types
from typing import Any

_lock = threading.RLock()


class Deferred(types.ModuleType):
    """A module imported on first attribute access."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.load(), name)

    def load(self) -> types.ModuleType:
        """The real module (imported now if it is not yet)."""
        real = self.__dict__.get("_deferred_real")
        if real is not None:
            return real
        with _lock:
            real = self.__dict__.get("_deferred_real")
            if real is None:
                name = self.__name__
                if sys.modules.get(name) is self:
                    del sys.modules[name]
                try:
                    real = importlib.import_module(name)
                except BaseException:
                    sys.modules.setdefault(name, self)
                    raise
                self.__dict__.update(real.__dict__)
                self.__dict__["_deferred_real"] = real
        return real


def defer(name: str) -> None:
    """Defer importing `name` until one of its attributes is read (no-op once imported)."""
    with _lock:
        if name not in sys.modules:
            sys.modules[name] = Deferred(name)


def loaded(name: str) -> bool:
    """True if the real module `name` is imported."""
    mod = sys.modules.get(name)
    return mod is not None and not (isinstance(mod, Deferred)
                                    and "_deferred_real" not in mod.__dict__)
