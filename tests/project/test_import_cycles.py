"""No import circles in gateway/ or recorder/, deferred imports included."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.project.importgraph import edges
from tests.project.importgraph import modules as _modules


def _is_type_checking(test: ast.expr) -> bool:
    """True for `if TYPE_CHECKING:` and `if typing.TYPE_CHECKING:`."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, except those under `if TYPE_CHECKING:`."""
    out: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)  # the runtime branch still imports
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of the checked packages it imports (module or function level)."""
    graph: dict[str, set[str]] = {mod: set() for mod in modules}
    for mod, hit in edges(modules, _imports):
        graph[mod].add(hit)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_finder_sees_a_deferred_circle_and_skips_type_checking() -> None:
    src = {"a": "def f():\n    from b import x\n", "b": "import a\n",
           "c": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import d\n",
           "d": "import c\n"}
    graph: dict[str, set[str]] = {}
    for mod, text in src.items():
        graph[mod] = {n.names[0].name if isinstance(n, ast.Import) else n.module or ""
                      for n in _imports(ast.parse(text))} & set(src)
    assert cycles(graph) == [["a", "b"]]


def test_no_import_circles() -> None:
    found = cycles(import_graph(_modules()))
    assert found == [], "import circles (break them; `if TYPE_CHECKING:` for annotations):\n" + \
        "\n".join(" <-> ".join(c) for c in found)
