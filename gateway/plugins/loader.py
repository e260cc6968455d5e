"""Finding and loading plugins: entry points, API version check, configure with a timeout."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .api import ENTRY_POINT_GROUP, PLUGIN_API_VERSION, PROVIDER_KINDS, Plugin
from .settings import PluginSettings

log = logging.getLogger(__name__)

NAME = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
LOAD_TIMEOUT_S = 10.0


@dataclass
class Loaded:
    """A plugin that loaded: its name, object, config and providers by kind."""

    name: str
    plugin: Plugin
    config: dict[str, Any]
    providers: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Failure:
    """A plugin that did not load, and why."""

    name: str
    reason: str


def find(name: str, group: str = ENTRY_POINT_GROUP) -> Callable[[], Any] | None:
    """The factory registered under name in the entry point group, or None."""
    from importlib import metadata  # noqa: PLC0415 - importlib.metadata (zipfile, csv) on use

    for ep in metadata.entry_points(group=group):
        if ep.name == name:
            return ep.load()
    return None


def available(group: str = ENTRY_POINT_GROUP) -> list[str]:
    """Names of every installed plugin."""
    from importlib import metadata  # noqa: PLC0415 - importlib.metadata (zipfile, csv) on use

    return sorted({ep.name for ep in metadata.entry_points(group=group)})


def _instantiate(name: str, config: dict[str, Any]) -> Loaded:
    factory = find(name)
    if factory is None:
        known = ", ".join(available()) or "none installed"
        raise LookupError(f"no plugin named '{name}' in entry point group "
                          f"'{ENTRY_POINT_GROUP}' (installed: {known})")
    plugin = factory()
    version = getattr(plugin, "api_version", None)
    if version != PLUGIN_API_VERSION:
        raise ValueError(f"plugin API version {version!r} is not supported; this gateway "
                         f"serves version {PLUGIN_API_VERSION}")
    plugin.name = name
    plugin.configure(config)
    providers = dict(plugin.providers() or {})
    unknown = sorted(set(providers) - set(PROVIDER_KINDS))
    if unknown:
        raise ValueError(f"unknown provider kind(s) {unknown}; known: {list(PROVIDER_KINDS)}")
    return Loaded(name, plugin, config, {k: v for k, v in providers.items() if v is not None})


def _capture(out: list[Any], name: str, config: dict[str, Any]) -> None:
    try:
        out.append(_instantiate(name, config))
    except BaseException as exc:  # any plugin failure is reported, not raised
        out.append(exc)


def load_all(names: Iterable[str], settings: PluginSettings,
             timeout_s: float = LOAD_TIMEOUT_S) -> tuple[list[Loaded], list[Failure]]:
    """Load each named plugin, configured with its `plugins.<name>.*` settings; one that fails
    (or hangs in configure) is reported, not fatal."""
    loaded: list[Loaded] = []
    failures: list[Failure] = []
    seen: set[str] = set()
    for name in names:
        if name in seen:
            continue
        seen.add(name)
        if not NAME.match(name):
            failures.append(Failure(name, "invalid plugin name (letters, digits, '_', '-')"))
            continue
        done: list[Any] = []
        worker = threading.Thread(  # daemon: a plugin hanging in configure never holds exit
            target=_capture, args=(done, name, settings.config(name)),
            name=f"load-{name}", daemon=True)
        worker.start()
        worker.join(timeout_s)
        if not done:
            failures.append(Failure(name, f"loading did not finish within {timeout_s:g} s"))
        elif isinstance(done[0], BaseException):
            failures.append(Failure(name, f"{type(done[0]).__name__}: {done[0]}"))
        else:
            loaded.append(done[0])
            log.info("plugin %s loaded (providers: %s)", name,
                     ", ".join(done[0].providers) or "none")
        if failures and failures[-1].name == name:
            log.error("plugin %s failed to load: %s", name, failures[-1].reason)
    return loaded, failures
