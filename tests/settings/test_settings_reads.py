"""No string-keyed settings reads outside gateway/settings/: every package reads its typed
settings (`settings.typed(X.from_settings)`, tests/settings/test_feature_settings.py)."""

from __future__ import annotations

import ast
from pathlib import Path

from gateway.settings.settings_table import SETTINGS

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("gateway", "recorder")
# Files allowed to read settings by string key. Shrink only (empty: none).
ALLOWED: set[str] = set()
KEYS = frozenset(s.key for s in SETTINGS)
PREFIXES = tuple(sorted({k.split(".")[0] + "." for k in KEYS if "." in k}))


def _names_a_setting(text: str) -> bool:
    return text in KEYS or text.startswith(PREFIXES)


def _receiver(node: ast.expr) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _keyed(arg: ast.expr, receiver: str) -> bool:
    """A settings key: a literal naming a setting (or starting like one), or any computed
    key on an object called `settings`."""
    on_settings = receiver == "settings" or receiver.endswith(".settings")
    if isinstance(arg, ast.Constant):
        return isinstance(arg.value, str) and _names_a_setting(arg.value)
    if isinstance(arg, ast.JoinedStr):
        head = arg.values[0] if arg.values else None
        return on_settings or (isinstance(head, ast.Constant) and _names_a_setting(str(head.value)))
    return on_settings and not isinstance(arg, ast.Slice)


def string_reads(source: str) -> list[int]:
    """Lines of `x["a.b"]`, `x.get("a.b")`, `x.section("a.")` and `settings[key]` reads."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and _keyed(node.slice, _receiver(node.value)):
            found.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("get", "section") and node.args \
                and _keyed(node.args[0], _receiver(node.func.value)):
            found.append(node.lineno)
    return sorted(found)


def test_no_string_keyed_settings_read_outside_the_settings_package() -> None:
    found = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith("gateway/settings/") or rel in ALLOWED:
                continue
            lines = path.read_text().splitlines()
            found += [f"{rel}:{n}: {lines[n - 1].strip()}" for n in string_reads(path.read_text())]
    assert found == [], "read these through the package's typed settings:\n" + "\n".join(found)


def test_the_allowed_files_exist() -> None:
    assert sorted(p for p in ALLOWED if not (ROOT / p).is_file()) == []


def test_the_finder_sees_each_form_of_a_string_read() -> None:
    source = "\n".join([
        's["server.port"]',  # 1
        'state.settings["state_dir"]',  # 2
        'settings.get("aggregation.discover", False)',  # 3
        'settings.section("faults.diagnostics_bridge.code_map.")',  # 4
        'settings[f"locking.defaults.{kind}.breakable"]',  # 5
        'settings[flag]',  # 6
        'cfg[f"{PREFIX}.{key}"]',  # 7: computed, not on `settings`: not seen
        'body.get("severity", "info")',  # 8: not a setting
        'tree["plugins"]',  # 9: names the `plugins` setting
        'x = settings.typed(A.from_settings).port',  # 10
        'settings[1:2]',  # 11: a slice
    ])
    assert string_reads(source) == [1, 2, 3, 4, 5, 6, 9]
