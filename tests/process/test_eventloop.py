"""server.event_loop: uvloop by default when it imports, asyncio on request, and a setting
error that names the setting when uvloop is asked for and missing."""

from __future__ import annotations

import asyncio
import sys

import pytest

from gateway.process import eventloop
from gateway.settings.config import ConfigError, load


def _kind() -> str:
    return type(asyncio.get_running_loop()).__module__.split(".")[0]


async def _report(into: list[str]) -> None:
    await asyncio.sleep(0)
    into.append(_kind())


def test_auto_runs_on_uvloop_when_it_imports() -> None:
    pytest.importorskip("uvloop")
    assert eventloop.loop_factory("auto")[0] == "uvloop"
    seen: list[str] = []
    eventloop.run(_report(seen), "auto")
    assert seen == ["uvloop"]


def test_asyncio_is_asyncio() -> None:
    seen: list[str] = []
    eventloop.run(_report(seen), "asyncio")
    assert seen == ["asyncio"]
    assert load(None, ["server.event_loop=asyncio"])["server.event_loop"] == "asyncio"


def test_without_uvloop_auto_falls_back_and_uvloop_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # `import uvloop` raises ImportError
    assert eventloop.loop_factory("auto")[0] == "asyncio"
    main = _report([])
    with pytest.raises(ConfigError, match="setting 'server.event_loop': uvloop is not "
                                          "installed.*pip install uvloop"):
        eventloop.run(main, "uvloop")
    assert main.cr_frame is None  # closed: no "never awaited" warning


def test_an_unknown_loop_is_a_setting_error() -> None:
    with pytest.raises(ConfigError, match="server.event_loop"):
        load(None, ["server.event_loop=fast"])
    with pytest.raises(ConfigError, match="server.event_loop"):
        eventloop.loop_factory("fast")
