"""The import graph of gateway/ and recorder/, read with ast: shared by the
import-circle test and the package-map test (which differ in the imports they count)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("gateway", "recorder")

ImportFinder = Callable[[ast.AST], list[ast.Import | ast.ImportFrom]]


def modules() -> dict[str, Path]:
    """Dotted module name -> source file, for every module of the checked packages."""
    found: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def resolve(name: str, known: dict[str, Path]) -> str | None:
    """The longest prefix of `name` that is one of our modules."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def edges(known: dict[str, Path], find: ImportFinder) -> set[tuple[str, str]]:
    """(importer, imported) for every import `find` returns between the known modules."""
    out: set[tuple[str, str]] = set()
    for mod, path in known.items():
        is_pkg = path.name == "__init__.py"
        for node in find(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = base[:len(base) - (node.level - 1)]
                    prefix = ".".join(base + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                # `from pkg import sub` imports the submodule; `from mod import name` the module
                targets = [f"{prefix}.{alias.name}" for alias in node.names] + [prefix]
            for target in targets:
                hit = resolve(target, known)
                if hit is not None and hit != mod:
                    out.add((mod, hit))
    return out
