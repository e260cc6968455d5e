"""The one lifecycle shape of a feature's service (start, shutdown, stop, health blocks) and
the runner that keeps their declared order."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Protocol


class FeatureService(Protocol):
    """A feature's service as the app runs it: started in order, stopped in reverse."""

    async def start(self) -> None:
        """Start over the running ROS side (and the services started before this one)."""
        ...

    async def shutdown(self) -> None:
        """End what keeps a request open (streams), before the server stops."""
        ...

    async def stop(self) -> None:
        """Stop and release what start took."""
        ...

    def health_blocks(self) -> dict[str, Callable[[], Any]]:
        """Its /health blocks (key -> provider), added once it started (a block its install
        registered earlier keeps its place in /health)."""
        ...


@contextlib.asynccontextmanager
async def run_features(services: Sequence[FeatureService],
                       health: dict[str, Callable[[], Any]]) -> AsyncIterator[None]:
    """Start `services` in order (each one's /health blocks into `health`), stop in reverse."""
    started: list[FeatureService] = []
    try:
        for svc in services:
            await svc.start()
            started.append(svc)
            health.update(svc.health_blocks())
        yield
    finally:
        for svc in reversed(started):
            await svc.stop()


async def shutdown_features(services: Sequence[FeatureService]) -> None:
    """End every service's open streams, in start order (an app's on_shutdown)."""
    for svc in services:
        await svc.shutdown()
