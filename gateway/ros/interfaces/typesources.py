"""Types the gateway lacks, prepared at start: the shell's ROS prefixes offered to
`ros.interface_paths`, the run-time build cache pruned, service types built on discovery.

`start()` is called once by the composition root (app.py) after the ROS bridge exists and
before the graph poller runs; it returns the builds of service types (ros/calls/callbuild.py) that
calls share.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

from ...events import GRAPH, Event, EventBus
from ..calls.callbuild import ServiceTypeBuilds
from ..dds.isolation import user_environment
from ..settings import RosSettings
from . import interface_paths
from .typecache import DAY_S

log = logging.getLogger(__name__)


def start(bridge: Any, settings: Any, state_dir: str,
          events: EventBus, storage: Any = None) -> ServiceTypeBuilds:
    """Offer the shell's prefixes, prune the build cache, hook the builds on discovery."""
    ros = settings.typed(RosSettings.from_settings)
    if ros.interface_paths_from_shell:
        interface_paths.offer_shell_prefixes(interface_paths.shell_prefixes(
            user_environment(), sys.prefix, ros.interface_paths))
    builds = ServiceTypeBuilds(bridge, state_dir)
    builds.storage = storage  # a build that fails on a full disk degrades /health
    bridge.closers.append(builds.close)
    try:
        builds.prune_cache(ros.type_build_cache_max_mb << 20,
                           ros.type_build_cache_max_age_days * DAY_S)
    except OSError as exc:  # the cache is the builds' business: they report their own errors
        log.warning("type build cache %s: not pruned (%s)", Path(state_dir) / "types", exc)
    if ros.type_build_on_discovery:
        def prefetch(event: Event[Any]) -> None:
            builds.prefetch(event.payload.snapshot)

        events.subscribe([GRAPH], prefetch)
    return builds
