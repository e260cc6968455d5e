"""ROS interface packages (`pkg.msg`, `pkg.srv`, `pkg.action`) that import a type on first use.

A generated `pkg/msg/__init__.py` imports every type of the package (sensor_msgs: 29
modules, 58 classes, about 0.9 MiB) although the gateway needs the few types it subscribes,
calls or serves, and rclpy itself reads a handful of rcl_interfaces, builtin_interfaces and
type_description_interfaces types. `install()` puts a finder first on `sys.meta_path` that
gives such a package, when its `__init__.py` holds nothing but the generated
`from pkg.msg._module import Type` lines, a module whose attributes import their type's
module when first read. Any other `__init__.py` is imported as usual. The classes are the
same objects as a plain import gives (one module per type), so `from pkg.msg import Type`,
`getattr(pkg.msg, "Type")` and `isinstance` behave as before; `dir()` lists every type.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import re
import sys
import types
from collections.abc import Sequence
from typing import Any

KINDS = frozenset(("msg", "srv", "action"))
# The only line a generated interface package __init__.py holds, one per class.
_LINE_RE = re.compile(
    r"^from (?P<module>[A-Za-z_][\w.]*) import (?P<name>[A-Za-z_]\w*)  # noqa: F401$")


class LazyInterfaces(types.ModuleType):
    """An interface package whose types are imported when first read."""

    __lazy_types__: dict[str, str]

    def __getattr__(self, name: str) -> Any:
        module = self.__dict__.get("__lazy_types__", {}).get(name)
        if module is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(self, name, value)
        return value

    def __dir__(self) -> list[str]:
        return sorted({*self.__dict__, *self.__dict__.get("__lazy_types__", {})})


def types_of(source: str, package: str) -> dict[str, str] | None:
    """Type name -> module of a generated `__init__.py`; None if it holds anything else."""
    found: dict[str, str] = {}
    for line in source.splitlines():
        if not line.strip():
            continue
        match = _LINE_RE.match(line)
        if match is None or not match["module"].startswith(package + "._"):
            return None
        found[match["name"]] = match["module"]
    return found or None


class _Loader(importlib.abc.Loader):
    def __init__(self, lazy_types: dict[str, str]) -> None:
        self.lazy_types = lazy_types

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return LazyInterfaces(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__dict__["__lazy_types__"] = self.lazy_types
        module.__dict__["__all__"] = sorted(self.lazy_types)  # `import *` gets every type


class LazyInterfaceFinder(importlib.abc.MetaPathFinder):
    """Finds `pkg.msg`/`pkg.srv`/`pkg.action` packages and loads them lazily."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        """A lazy spec for a generated interface package, None for any other module."""
        parts = fullname.split(".")
        if len(parts) != 2 or parts[1] not in KINDS or path is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.origin is None or not spec.origin.endswith("__init__.py"):
            return None
        try:
            with open(spec.origin, encoding="utf-8") as f:
                lazy_types = types_of(f.read(), fullname)
        except (OSError, UnicodeDecodeError):
            return None
        if lazy_types is None:
            return None
        lazy = importlib.machinery.ModuleSpec(fullname, _Loader(lazy_types), origin=spec.origin,
                                              is_package=True)
        lazy.submodule_search_locations = spec.submodule_search_locations
        lazy.has_location = True
        return lazy


_FINDER = LazyInterfaceFinder()


def install() -> None:
    """Load interface packages imported from now on lazily (packages imported stay)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
