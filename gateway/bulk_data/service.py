"""Bulk data's service under its app key: the upload store and the recorder, started over
the running ROS side, and the recorder's rosbag entries in fault details."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recorder.config import RecorderConfig, default_state_dir
from recorder.uploads import UploadStore

from ..faults.snapshots import NEVER_CAPTURED
from ..http.state import GatewayState
from ..model.entities import Entity
from ..model.timestamps import iso
from ..process.settings import ProcessSettings
from ..settings.config import ConfigError
from .settings import BulkDataSettings

if TYPE_CHECKING:
    from recorder.service import Recorder

    from ..faults.service import FaultService


ROSBAGS = "rosbags"
DOCS = "docs"  # `<path>/docs` is the scoped OpenAPI document, never a category or an id
_CATEGORY = re.compile(r"^[A-Za-z0-9_-]+$")


def recorder_class() -> type[Recorder]:
    """The recorder (imported when first needed: it is off by default)."""
    from recorder.service import Recorder  # noqa: PLC0415 - the recorder is off by default

    return Recorder


def _uploads_root(state: GatewayState) -> Path:
    configured = state.settings.typed(BulkDataSettings.from_settings).storage_path
    if configured:
        return Path(configured).expanduser()
    state_dir = state.settings.typed(ProcessSettings.from_settings).state_dir
    base = Path(state_dir).expanduser() if state_dir else default_state_dir()
    return base / "bulk_data"


def _graph(state: GatewayState) -> tuple[int, dict[str, Any]]:
    cache = state.cache
    return cache.generation, {n.fqn: n.publishers for n in cache.graph.nodes}


class BulkData:
    """The upload store and the recorder (snapshots.rosbag.enabled), started over ROS."""

    def __init__(self, state: GatewayState, faults: FaultService) -> None:
        self.state, self.faults = state, faults
        self.uploads = UploadStore(_uploads_root(state), state.storage)  # loaded by start
        self.recorder: Recorder | None = None  # snapshots.rosbag.enabled, once started

    async def start(self) -> None:
        """Open the upload store; start the recorder when snapshots.rosbag.enabled."""
        state = self.state
        for cat in state.settings.typed(BulkDataSettings.from_settings).categories:
            if not _CATEGORY.match(cat) or cat == DOCS:
                raise ConfigError(f"setting 'bulk_data.categories': {cat!r} is not a word "
                                  "(letters, digits, '_' and '-') or is the reserved 'docs'")
        await asyncio.to_thread(self.uploads.load)
        cfg = RecorderConfig.from_settings(state.settings, extra_excluded=NEVER_CAPTURED)
        self.faults.hooks.snapshot_providers.append(self.rosbag_snapshots)
        if not cfg.enabled:
            return
        rec = recorder_class()(cfg, lambda: _graph(state), state.bridge)
        rec.writer.storage = state.storage  # a bag that cannot be written degrades /health
        if await rec.start():
            self.recorder = rec
            rec.listen(state.events)  # every fault change, from the bus

    def health_blocks(self) -> dict[str, Callable[[], Any]]:
        """The recorder's /health block, when it records."""
        return {"x-vendor-recorder": self.recorder.health} if self.recorder is not None else {}

    async def shutdown(self) -> None:
        """Nothing streams: the recorder writes on stop."""

    async def stop(self) -> None:
        """Stop the recorder (writes what the open windows hold)."""
        rec, self.recorder = self.recorder, None
        if rec is not None:
            await rec.stop()

    def rosbag_snapshots(self, state: GatewayState, entity: Entity, fault: Any
                         ) -> list[dict[str, Any]]:
        """Fault detail `rosbag` snapshot entries, newest first (a fault snapshot provider)."""
        if self.recorder is None:
            return []
        return [{"type": "rosbag", "name": f"{rec.id}.{rec.format}",
                 "bulk_data_uri": f"{entity.path}/bulk-data/{ROSBAGS}/{rec.id}",
                 "size_bytes": rec.size, "duration_sec": rec.duration_sec, "format": rec.format,
                 state.xv: {"captured_at": iso(rec.created_ns)}}
                for rec in self.recorder.index.for_code(fault.code)]
