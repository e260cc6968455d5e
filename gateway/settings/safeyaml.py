"""A safe YAML loader with caps on nesting depth and alias expansion (YAML bombs refused)."""

from __future__ import annotations

from typing import Any

import yaml

MAX_DEPTH = 64  # nested mappings and sequences, aliases followed
MAX_ALIAS_NODES = 100_000  # nodes aliases may add beyond those written in the file


class YamlLimitError(yaml.YAMLError):
    """A document past a cap; problem says which, problem_mark where."""

    def __init__(self, problem: str, mark: Any = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def check_expansion(root: yaml.Node, max_depth: int = MAX_DEPTH,
                    max_alias_nodes: int = MAX_ALIAS_NODES) -> None:
    """YamlLimitError when the tree, aliases expanded, nests deeper than max_depth, refers to
    itself, or holds more than max_alias_nodes nodes beyond the distinct ones."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    # Iterative post-order walk: memoised per node, so a shared subtree is measured once.
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            kids = _children(node)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
            on_path.discard(key)
            if depth[key] > max_depth:
                raise YamlLimitError(f"nesting deeper than {max_depth} levels (aliases "
                                     "followed)", node.start_mark)
            if size[key] - len(size) > max_alias_nodes:
                raise YamlLimitError(f"aliases expand to more than {max_alias_nodes} nodes "
                                     "beyond those written", node.start_mark)
            continue
        if key in size:
            continue
        if key in on_path:
            raise YamlLimitError("an alias refers to a node that contains it", node.start_mark)
        on_path.add(key)
        stack.append((node, True))
        for kid in reversed(_children(node)):
            if id(kid) in on_path:
                raise YamlLimitError("an alias refers to a node that contains it",
                                     kid.start_mark)
            if id(kid) not in size:
                stack.append((kid, False))


class BoundedSafeLoader(yaml.SafeLoader):
    """SafeLoader refusing documents nested deeper than MAX_DEPTH while composing (before a
    RecursionError could happen) and alias expansions past MAX_ALIAS_NODES."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        """Compose one node, counting the nesting."""
        if self._depth >= MAX_DEPTH:
            raise YamlLimitError(f"nesting deeper than {MAX_DEPTH} levels",
                                 self.peek_event().start_mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self) -> Any:
        """Compose a document, then measure it with aliases expanded."""
        node = super().compose_document()
        if node is not None:
            check_expansion(node)
        return node
