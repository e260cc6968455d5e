"""The primary's robot key (gateway/federation/connect_key.py) and `diag-gateway robot-token`."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from gateway import cli
from gateway.federation.connect_auth import ROBOT, SHARED, ConnectGate, robot_token
from gateway.federation.connect_key import key_path, robot_key
from gateway.settings import config
from gateway.settings.config import ConfigError

SECRET = "fleet-shared-secret-0123456789"


def primary(tmp_path: Path, *more: str) -> config.Settings:
    return config.load(None, [f"state_dir={tmp_path / 'state'}", "aggregation.enabled=true",
                              f"aggregation.connect_token={SECRET}", *more])


def test_a_primary_makes_a_private_random_key_once(tmp_path: Path) -> None:
    settings = primary(tmp_path)
    key = robot_key(settings)
    path = key_path(str(tmp_path / "state"))
    assert path.exists() and len(key) == 64 and key != SECRET
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert robot_key(settings) == key  # kept: issued tokens stay valid across restarts
    assert robot_key(primary(tmp_path / "other")) != key


def test_no_key_is_made_without_robot_connections(tmp_path: Path) -> None:
    settings = config.load(None, [f"state_dir={tmp_path / 'state'}"])
    assert robot_key(settings) == ""
    assert not key_path(str(tmp_path / "state")).exists()
    assert len(robot_key(settings, create=True)) == 64  # the CLI's first issued token


def test_the_setting_wins_and_is_checked(tmp_path: Path) -> None:
    key = "configured-robot-key-0123456789"
    assert robot_key(primary(tmp_path, f"aggregation.connect_robot_secret={key}")) == key
    assert not key_path(str(tmp_path / "state")).exists()
    with pytest.raises(ConfigError, match="aggregation.connect_robot_secret"):
        robot_key(primary(tmp_path, "aggregation.connect_robot_secret=short"))
    with pytest.raises(ConfigError, match="must differ"):
        ConnectGate.from_settings(primary(tmp_path,
                                          f"aggregation.connect_robot_secret={SECRET}"))


def test_a_damaged_key_file_is_a_settings_error(tmp_path: Path) -> None:
    path = key_path(str(tmp_path / "state"))
    path.parent.mkdir(parents=True)
    path.write_text("abc\n")
    with pytest.raises(ConfigError, match="damaged"):
        robot_key(primary(tmp_path))


def test_robot_token_prints_what_the_primary_accepts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = f"state_dir={tmp_path / 'state'}"
    listed = "aggregation.connect_robots=[robot9:r9-own-token-abcdefgh]"
    assert cli.main(["robot-token", "--set", state, "robot1", "robot2"]) == 0
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert [name for name, _ in lines] == ["robot1", "robot2"]
    tokens = dict(lines)
    gate = ConnectGate.from_settings(primary(tmp_path, "aggregation.connect_accept_shared=false",
                                             listed))
    assert gate.credentials.proof("robot1", tokens["robot1"]) == ROBOT
    assert gate.credentials.proof("robot2", tokens["robot1"]) is None
    # the shared token's holder cannot compute robot1's token any more
    assert gate.credentials.proof("robot1", robot_token(SECRET, "robot1")) is None
    assert ConnectGate.from_settings(primary(tmp_path)).credentials.proof(
        "robot1", robot_token(SECRET, "robot1")) == SHARED
    assert cli.main(["robot-token", "--set", state, "--set", listed, "robot9"]) == 2
    assert "connect_robots" in capsys.readouterr().err
    assert cli.main(["robot-token", "--set", state, "a__b"]) == 2
