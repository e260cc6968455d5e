"""The bounded YAML loader: alias bombs, deep nesting and self-reference refused, not run."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from gateway.discovery import manifest
from gateway.settings.safeyaml import (
    MAX_ALIAS_NODES,
    MAX_DEPTH,
    BoundedSafeLoader,
    YamlLimitError,
)


def bomb(levels: int, fan: int = 9) -> str:
    """The 'billion laughs': each level names the previous one fan times."""
    lines = ['a0: &a0 ["lol"]']
    for n in range(1, levels + 1):
        refs = ", ".join([f"*a{n - 1}"] * fan)
        lines.append(f"a{n}: &a{n} [{refs}]")
    return "\n".join(lines) + "\n"


def load(text: str) -> object:
    return yaml.load(text, Loader=BoundedSafeLoader)  # a SafeLoader subclass


def test_an_alias_bomb_is_refused_quickly() -> None:
    text = bomb(9)  # 9**9 = 387 million strings if expanded, from under 1 KiB
    assert len(text) < 1024
    started = time.monotonic()
    with pytest.raises(YamlLimitError, match="aliases expand to more than"):
        load(text)
    assert time.monotonic() - started < 5.0


def test_deep_nesting_is_refused_before_a_recursion_error() -> None:
    with pytest.raises(YamlLimitError, match=f"deeper than {MAX_DEPTH}"):
        load("[" * 5000 + "]" * 5000)
    with pytest.raises(YamlLimitError, match=f"deeper than {MAX_DEPTH}"):
        load("".join(f"{'  ' * n}k{n}:\n" for n in range(200)) + "  " * 200 + "leaf\n")


def test_aliases_may_not_nest_past_the_depth_cap_either() -> None:
    lines = ["l0: &l0 [1]"] + [f"l{n}: &l{n} [*l{n - 1}]" for n in range(1, MAX_DEPTH + 2)]
    with pytest.raises(YamlLimitError, match="aliases followed"):
        load("\n".join(lines))


def test_an_alias_to_its_own_container_is_refused() -> None:
    with pytest.raises(YamlLimitError, match="contains it"):
        load("a: &a [1, *a]\n")


def test_ordinary_documents_and_modest_aliases_load() -> None:
    assert load(bomb(3)) is not None  # 9**3 = 729 nodes
    doc = load("base: &b {x: 1, y: [1, 2]}\nitems: [*b, *b, *b]\n")
    assert doc == {"base": {"x": 1, "y": [1, 2]}, "items": [{"x": 1, "y": [1, 2]}] * 3}
    assert MAX_ALIAS_NODES >= 10_000


def test_the_manifest_reports_a_bomb_as_a_load_issue(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text('manifest_version: "1.0"\n' + bomb(9))
    issues: list[manifest.Issue] = []
    assert manifest._Parser(str(path), issues).read_file(path, "LOAD") is None
    (issue,) = issues
    assert issue.rule == "LOAD" and "YAML refused" in issue.message and issue.line > 0
