"""The event loop the gateway runs on: uvloop when installed, else asyncio's own.

Each request costs the event loop a wake (epoll, the ready callbacks, the transport's read
and write). asyncio's selector loop runs that in Python; uvloop (libuv) runs it in C. The
difference is largest where a gateway sleeps between requests, as a robot does between a
primary's fan-out reads: its code then runs with cold caches, at several times its warm cost
(bench/wake_cost.py). aiohttp, the rawhttp client and the protocols here use only the
asyncio API that both loops provide. `server.event_loop` chooses: auto (uvloop when it
imports), uvloop (refuse to start without it) or asyncio.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from ..settings.config import ConfigError

log = logging.getLogger(__name__)

CHOICES = ("auto", "uvloop", "asyncio")


def loop_factory(choice: str) -> tuple[str, Callable[[], asyncio.AbstractEventLoop]]:
    """(name, factory) of the loop `server.event_loop` asks for; ConfigError when it asked
    for uvloop and uvloop does not import."""
    if choice not in CHOICES:
        raise ConfigError(f"setting 'server.event_loop': expected one of {', '.join(CHOICES)}, "
                          f"got {choice!r}")
    if choice != "asyncio":
        try:
            import uvloop  # noqa: PLC0415 - optional: asyncio's loop without it
        except ImportError as exc:
            if choice == "uvloop":
                raise ConfigError("setting 'server.event_loop': uvloop is not installed "
                                  f"({exc}); `pip install uvloop`, or set it to asyncio or "
                                  "auto") from None
        else:
            return "uvloop", uvloop.new_event_loop
    return "asyncio", asyncio.new_event_loop


def run(main: Coroutine[Any, Any, None], choice: str) -> None:
    """Run `main` to completion on a new loop of the chosen kind (as asyncio.run)."""
    try:
        name, factory = loop_factory(choice)
    except ConfigError:
        main.close()
        raise
    log.debug("event loop: %s", name)
    if not hasattr(asyncio, "Runner"):  # Python 3.10: asyncio.run makes its loop by policy
        if name == "asyncio":
            asyncio.run(main)
            return

        class _Policy(asyncio.DefaultEventLoopPolicy):
            def new_event_loop(self) -> asyncio.AbstractEventLoop:
                return factory()
        asyncio.set_event_loop_policy(_Policy())
        try:
            asyncio.run(main)
        finally:
            asyncio.set_event_loop_policy(None)
        return
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(main)
