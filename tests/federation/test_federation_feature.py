"""The federation as one feature service (gateway/federation/feature.py): last in the app's
order, its parts started in order and stopped in reverse, nothing left running by a failed
start."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gateway.app import FEATURE_SERVICES, make_app
from gateway.auth.enforce import AUTH
from gateway.federation.feature import Federation
from gateway.federation.relay import StreamRelay
from gateway.federation.service import FEDERATION
from gateway.http.state import STATE
from gateway.lifecycle.control import LIFECYCLE
from gateway.settings.config import load


def _app(tmp_path: Path, *settings: str) -> Any:
    return make_app(load(None, [f"state_dir={tmp_path}", *settings]))


def _close(app: Any) -> None:
    app[AUTH].grants.store.close()


def test_off_no_federation_service(tmp_path: Path) -> None:
    app = _app(tmp_path)
    assert app[FEATURE_SERVICES][-1] is app[LIFECYCLE]
    assert FEDERATION not in app
    _close(app)


def test_aggregation_runs_last_with_its_health_blocks_registered_at_build(
        tmp_path: Path) -> None:
    app = _app(tmp_path, "aggregation.enabled=true")
    fed = app[FEATURE_SERVICES][-1]
    assert isinstance(fed, Federation)
    assert app[FEATURE_SERVICES][-2] is app[LIFECYCLE]
    assert fed.service is app[FEDERATION] and fed.announcer is None and fed.connect_out is None
    state = app[STATE]
    assert state.aggregation is fed.service and "aggregation" in state.features
    assert "peers" in state.health
    _close(app)


def test_announce_alone_is_an_announcer(tmp_path: Path) -> None:
    app = _app(tmp_path, "aggregation.announce=true")
    fed = app[FEATURE_SERVICES][-1]
    assert isinstance(fed, Federation)
    assert fed.announcer is not None and fed.service is None and FEDERATION not in app
    _close(app)


class ConnectOut:
    """The connection out as the feature runs it: a task started, then stopped."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def start(self) -> None:
        self.log.append("start connect-out")

    async def stop(self) -> None:
        self.log.append("stop connect-out")


class Peers:
    """The federation service as the feature runs it."""

    def __init__(self, log: list[str], fail: bool) -> None:
        self.log, self.fail = log, fail
        self.relay, self.no_fan_out = object(), lambda request: False

    def attach(self, cache: Any) -> None:
        self.log.append("attach peers")

    async def start(self) -> None:
        self.log.append("start peers")
        if self.fail:
            raise RuntimeError("peers")

    async def stop(self) -> None:
        self.log.append("stop peers")


def _federation(tmp_path: Path, log: list[str], fail: bool = False) -> tuple[Federation, Any]:
    app = _app(tmp_path, "aggregation.enabled=true")
    fed = app[FEATURE_SERVICES][-1]
    fed.connect_out, fed.service = ConnectOut(log), Peers(log, fail)
    fed.state = SimpleNamespace(cache=None)  # the ROS side's entity cache
    stream = SimpleNamespace(relay=None)
    fed.faults = SimpleNamespace(stream=stream)
    _close(app)
    return fed, stream


def test_parts_start_in_order_and_stop_in_reverse(tmp_path: Path) -> None:
    log: list[str] = []
    fed, stream = _federation(tmp_path, log)

    async def run() -> None:
        await fed.start()
        assert isinstance(stream.relay, StreamRelay)  # peers' events join the fault stream
        log.append("serving")
        await fed.shutdown()
        await fed.stop()

    asyncio.run(run())
    assert log == ["start connect-out", "attach peers", "start peers", "serving",
                   "stop peers", "stop connect-out"]
    assert stream.relay is None
    assert fed.health_blocks() == {}


def test_a_failed_start_stops_the_connection_out(tmp_path: Path) -> None:
    log: list[str] = []
    fed, stream = _federation(tmp_path, log, fail=True)
    with pytest.raises(RuntimeError, match="peers"):
        asyncio.run(fed.start())
    assert log == ["start connect-out", "attach peers", "start peers", "stop connect-out"]
    assert stream.relay is None


def test_connect_out_task_runs_until_stopped(tmp_path: Path) -> None:
    app = _app(tmp_path, "aggregation.connect_to=http://127.0.0.1:9",
               "aggregation.connect_robot_token=" + "t" * 32)
    fed = app[FEATURE_SERVICES][-1]
    assert isinstance(fed, Federation) and fed.service is None and fed.announcer is None
    out = fed.connect_out
    assert out is not None

    async def run() -> None:
        await fed.start()
        task = out.task
        assert task is not None and not task.done()
        await fed.stop()
        assert out.task is None and task.done()

    asyncio.run(run())
    _close(app)
