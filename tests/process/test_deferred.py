"""Deferred imports: a stand-in module imports the real one on first attribute read."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.process.deferred import Deferred, defer, loaded


@pytest.fixture
def heavy(tmp_path: Path) -> Iterator[str]:
    """A module name importable from tmp_path that counts its imports."""
    name = "deferred_probe_mod"
    (tmp_path / f"{name}.py").write_text(
        "import builtins, time\n"
        "builtins.deferred_probe_runs = getattr(builtins, 'deferred_probe_runs', 0) + 1\n"
        "time.sleep(0.05)\n"
        "VALUE = 42\n"
        "def double(x):\n    return 2 * x\n")
    sys.path.insert(0, str(tmp_path))
    yield name
    sys.path.remove(str(tmp_path))
    sys.modules.pop(name, None)
    import builtins
    builtins.__dict__.pop("deferred_probe_runs", None)


def test_import_binds_a_stand_in_until_an_attribute_is_read(heavy: str) -> None:
    import builtins

    defer(heavy)
    mod = __import__(heavy)
    assert isinstance(mod, Deferred) and not loaded(heavy)
    assert getattr(builtins, "deferred_probe_runs", 0) == 0  # not imported yet
    assert mod.double(mod.VALUE) == 84
    assert loaded(heavy) and builtins.deferred_probe_runs == 1
    assert sys.modules[heavy] is not mod and sys.modules[heavy].VALUE == 42  # the real module
    assert "VALUE" in mod.__dict__  # copied: later reads are plain dictionary hits
    defer(heavy)  # already imported: no-op
    assert sys.modules[heavy].__class__ is not Deferred


def test_concurrent_first_reads_import_once(heavy: str) -> None:
    import builtins

    defer(heavy)
    mod = sys.modules[heavy]
    seen: list[int] = []
    threads = [threading.Thread(target=lambda: seen.append(mod.VALUE)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [42] * 8 and builtins.deferred_probe_runs == 1


def test_a_failing_import_leaves_the_stand_in_and_raises() -> None:
    name = "deferred_probe_missing_mod"
    defer(name)
    try:
        with pytest.raises(ModuleNotFoundError):
            sys.modules[name].anything  # noqa: B018
        assert isinstance(sys.modules[name], Deferred) and not loaded(name)
    finally:
        sys.modules.pop(name, None)


def test_the_ros_bridge_imports_without_numpy_or_the_code_generator() -> None:
    import subprocess

    code = ("import sys, gateway.ros.dds.bridge, gateway.process.deferred as d; "
            "print(d.loaded('numpy'), 'lark' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    assert out == ["False", "False"], out
