"""The shell's ROS prefixes (set aside by ros/dds/isolation.py) offered to ros.interface_paths."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from gateway.ros.dds.isolation import OwnRos, user_values
from gateway.ros.interfaces import interface_paths
from gateway.ros.interfaces.interface_paths import offer_shell_prefixes, shell_prefixes

PY = f"python{sys.version_info.major}.{sys.version_info.minor}"


def test_the_users_prefixes_other_than_the_gateways_own_and_the_configured(
        tmp_path: Path) -> None:
    own, a, b = tmp_path / "venv", tmp_path / "a", tmp_path / "b"
    env = {"AMENT_PREFIX_PATH": f"{a}:{own}:{b}:{a}:relative:"}
    assert shell_prefixes(env, str(own)) == [str(a), str(b)]
    assert shell_prefixes(env, str(own), [str(b)]) == [str(a)]
    assert shell_prefixes({}, str(own)) == []


def test_the_set_aside_prefixes_travel_across_the_reexec(tmp_path: Path) -> None:
    """What isolation carries in DIAG_GATEWAY_USER_ENV is what the shell had."""
    import json

    own = OwnRos(prefix=str(tmp_path / "venv"), lib_dirs=(str(tmp_path / "venv" / "lib"),))
    carried = {"DIAG_GATEWAY_USER_ENV": json.dumps(
        {"pid": 1, "env": {"AMENT_PREFIX_PATH": "/opt/ros/jazzy:/ws/install"}})}
    user = {k: v for k, v in user_values(carried, own).items() if v is not None}
    assert shell_prefixes(user, own.prefix) == ["/opt/ros/jazzy", "/ws/install"]


@pytest.fixture
def restore_served() -> object:
    active = interface_paths._active
    finders = list(sys.meta_path)
    yield None
    interface_paths._active = active
    sys.meta_path[:] = finders


def _package(root: Path, name: str, py: str = PY) -> None:
    pkg = root / "lib" / py / "site-packages" / name
    (pkg / "msg").mkdir(parents=True)
    (pkg / "msg" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / f"{name}_s__rosidl_typesupport_c.so").write_bytes(b"")
    (root / "lib" / f"lib{name}__rosidl_typesupport_c.so").write_bytes(b"")


def test_prefixes_that_serve_this_python_are_served_others_logged(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, restore_served: object) -> None:
    good, other_py = tmp_path / "ws", tmp_path / "apt"
    _package(good, "robot_shell_msgs")
    _package(other_py, "robot_apt_msgs", py="python3.2")
    with caplog.at_level(logging.INFO, "gateway.ros.interfaces.interface_paths"):
        served = offer_shell_prefixes([str(good), str(other_py), str(tmp_path / "gone")])
    assert served == {str(good): ["robot_shell_msgs"]}
    assert "robot_shell_msgs" in interface_paths.active().packages
    assert str(good) in interface_paths.active().summary()["prefixes"]
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1, lines  # one line at start
    assert "ros.interface_paths_from_shell" in lines[0]
    assert f"{other_py}: built for python3.2" in lines[0], lines[0]
    assert f"{tmp_path / 'gone'}: not a directory" in lines[0], lines[0]


def test_nothing_offered_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, "gateway.ros.interfaces.interface_paths"):
        assert offer_shell_prefixes([]) == {}
    assert caplog.records == []
