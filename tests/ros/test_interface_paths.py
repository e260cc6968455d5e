"""ros.interface_paths: which packages of which prefix layouts are served."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gateway.ros.interfaces.interface_paths import scan

PY = f"python{sys.version_info.major}.{sys.version_info.minor}"


def _package(site: Path, lib: Path, name: str, kinds: tuple[str, ...] = ("msg",)) -> None:
    pkg = site / name
    for kind in kinds:
        (pkg / kind).mkdir(parents=True)
        (pkg / kind / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / f"{name}_s__rosidl_typesupport_c.so").write_bytes(b"")
    lib.mkdir(parents=True, exist_ok=True)
    (lib / f"lib{name}__rosidl_typesupport_c.so").write_bytes(b"")


def _lacks(*names: str) -> object:
    return lambda name: name not in names


def test_an_opt_ros_layout_serves_only_what_the_gateway_lacks(tmp_path: Path) -> None:
    site, lib = tmp_path / "lib" / PY / "site-packages", tmp_path / "lib"
    _package(site, lib, "nav_msgs", ("msg", "srv"))
    _package(site, lib, "std_msgs")
    (site / "rclpy").mkdir()  # core packages are no interface packages
    (site / "rclpy" / "__init__.py").write_text("")
    (site / "not_ros").mkdir()
    found = scan([str(tmp_path)], have=_lacks("nav_msgs", "rclpy", "not_ros"))
    assert sorted(found.packages) == ["nav_msgs"]
    assert found.packages["nav_msgs"].lib_dir == str(lib)
    assert found.skipped == []


def test_an_isolated_colcon_tree(tmp_path: Path) -> None:
    for name in ("robot_msgs", "arm_msgs"):
        root = tmp_path / name
        (root / "share").mkdir(parents=True)
        _package(root / "lib" / PY / "site-packages", root / "lib", name, ("msg", "action"))
    found = scan([str(tmp_path)], have=_lacks("robot_msgs", "arm_msgs"))
    assert sorted(found.packages) == ["arm_msgs", "robot_msgs"]
    assert found.packages["arm_msgs"].lib_dir == str(tmp_path / "arm_msgs" / "lib")


def test_a_package_without_its_library_is_set_aside(tmp_path: Path) -> None:
    site, lib = tmp_path / "lib" / PY / "site-packages", tmp_path / "lib"
    _package(site, lib, "nav_msgs")
    (lib / "libnav_msgs__rosidl_typesupport_c.so").unlink()
    found = scan([str(tmp_path)], have=_lacks("nav_msgs"))
    assert found.packages == {}
    assert found.skipped == ["nav_msgs: no libnav_msgs__rosidl_typesupport_c.so"]


def test_a_prefix_for_another_python_is_set_aside_with_the_reason(tmp_path: Path) -> None:
    _package(tmp_path / "lib" / "python3.99" / "site-packages", tmp_path / "lib", "nav_msgs")
    found = scan([str(tmp_path)], have=_lacks("nav_msgs"))
    assert found.packages == {}
    assert "python3.99" in found.skipped[0] and PY in found.skipped[0]


def test_a_missing_prefix_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="ros.interface_paths"):
        scan([str(tmp_path / "nowhere")])


def test_the_first_prefix_wins(tmp_path: Path) -> None:
    for prefix in ("a", "b"):
        root = tmp_path / prefix
        _package(root / "lib" / PY / "site-packages", root / "lib", "nav_msgs")
    found = scan([str(tmp_path / "a"), str(tmp_path / "b")], have=_lacks("nav_msgs"))
    assert found.packages["nav_msgs"].site_dir.startswith(str(tmp_path / "a"))


def test_serve_adds_a_run_time_build_without_replacing_anything(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gateway.ros.interfaces import interface_paths

    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.setattr(interface_paths, "_active", interface_paths.InterfacePaths())
    first, second = tmp_path / "first", tmp_path / "second"
    for prefix in (first, second):
        site, lib = prefix / "lib" / PY / "site-packages", prefix / "lib"
        _package(site, lib, "zz_built_msgs", ("msg", "srv"))
        _package(site, lib, "std_msgs")  # the gateway's own: never served from a build
    assert interface_paths.serve(str(first)) == ["zz_built_msgs"]
    assert interface_paths.serve(str(second)) == []  # served already: the first one stays
    served = interface_paths.active()
    assert served.packages["zz_built_msgs"].site_dir.startswith(str(first))
    assert served.prefixes == (str(first), str(second))
    assert sum(isinstance(f, interface_paths._Finder) for f in sys.meta_path) == 1
