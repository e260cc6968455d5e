"""Calling plugin code: a timeout for every call, errors mapped to the spec's plugin error body."""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections.abc import Callable
from typing import Any

from ..errors import (
    NOT_IMPLEMENTED,
    ApiError,
    not_implemented,
    not_responding,
    os_error,
    storage_error,
)
from ..process.storage import INSUFFICIENT, StorageWriteError, failure_kind
from .api import PluginError, Unsupported

log = logging.getLogger(__name__)

MESSAGE_LIMIT = 512
PLUGIN_ERROR = "x-vendor-plugin-error"


def plugin_error(status: int, message: str, entity_id: str | None = None) -> ApiError:
    """The plugin error body: status clamped to 400..599, message cut at 512 characters."""
    status = min(max(int(status), 400), 599)
    if len(message) > MESSAGE_LIMIT:
        message = message[:MESSAGE_LIMIT] + "..."
    params = {"entity_id": entity_id} if entity_id is not None else None
    return ApiError(status, "vendor-error", message, vendor_code=PLUGIN_ERROR, parameters=params)


def map_error(exc: BaseException, plugin: str, entity_id: str | None) -> ApiError:
    """The API error answering a plugin's exception."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, PluginError):
        if exc.error_code is not None:  # a spec error code (AccessDenied, Unsupported, ...)
            message = exc.message if len(exc.message) <= MESSAGE_LIMIT else \
                exc.message[:MESSAGE_LIMIT] + "..."
            if isinstance(exc, Unsupported):  # the same 501 body as every feature-absent route
                err = not_implemented(exc.feature, message)
                if entity_id is not None and err.parameters is not None:
                    err.parameters["entity_id"] = entity_id
                return err
            params = {"entity_id": entity_id} if entity_id is not None else None
            return ApiError(min(max(int(exc.status), 400), 599), exc.error_code, message,
                            parameters=params)
        if exc.vendor_code != PLUGIN_ERROR:  # a provider-specific vendor code
            err = plugin_error(exc.status, exc.message, entity_id)
            err.vendor_code = exc.vendor_code
            if err.status == 501:  # feature absent: not-implemented, the vendor code beside it
                err.error_code = NOT_IMPLEMENTED
            return err
        return plugin_error(exc.status, exc.message, entity_id)
    if isinstance(exc, StorageWriteError):  # a full disk is not the plugin's fault: 507
        return storage_error(exc)
    if isinstance(exc, OSError) and failure_kind(exc) in INSUFFICIENT:
        log.error("plugin %s: storage exhausted", plugin, exc_info=exc)
        return os_error(exc)
    log.error("plugin %s raised", plugin, exc_info=exc)
    return plugin_error(500, "Plugin threw exception", entity_id)


class Caller:
    """Runs one plugin's calls: sync ones on its own worker threads, all with a timeout."""

    def __init__(self, plugin: str, timeout_s: float, threads: int = 8) -> None:
        self.plugin = plugin
        self.timeout_s = timeout_s
        # At most `threads` sync calls of this plugin at once: one whose calls hang uses up
        # only its own slots. Daemon threads, so a hung call never holds up the exit.
        self._threads = threads
        self._slots: asyncio.Semaphore | None = None
        self.calls = 0
        self.timeouts = 0
        self.errors = 0

    async def _in_thread(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._threads)
        slots = self._slots
        await slots.acquire()
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()

        def settle(result: Any, exc: BaseException | None) -> None:
            slots.release()
            if fut.done():
                return
            if exc is not None:
                fut.set_exception(exc)
            else:
                fut.set_result(result)

        def run() -> None:
            try:
                outcome: tuple[Any, BaseException | None] = (fn(*args), None)
            except BaseException as exc:  # handed to the awaiting caller
                outcome = (None, exc)
            try:
                loop.call_soon_threadsafe(settle, *outcome)
            except RuntimeError:  # the loop closed while the call hung: nobody waits
                pass

        threading.Thread(target=run, name=f"plugin-{self.plugin}", daemon=True).start()
        return await fut

    async def __call__(self, fn: Callable[..., Any], *args: Any, entity_id: str | None = None,
                       timeout: float | None = None, what: str = "",
                       passthrough: tuple[type[BaseException], ...] = ()) -> Any:
        """fn(*args) with a timeout; ApiError for a raise (plugin error) or a hang (504).

        Exceptions of the `passthrough` types reach the caller unchanged.
        """
        budget = self.timeout_s if timeout is None else timeout
        self.calls += 1
        try:
            if inspect.iscoroutinefunction(fn):
                return await asyncio.wait_for(fn(*args), budget)
            result = await asyncio.wait_for(self._in_thread(fn, args), budget)
            if inspect.isawaitable(result):
                result = await asyncio.wait_for(result, budget)
            return result
        except asyncio.TimeoutError:
            self.timeouts += 1
            name = what or getattr(fn, "__name__", "call")
            raise not_responding(
                f"Plugin '{self.plugin}' did not answer {name} within {budget:g} s "
                "(setting plugin_call_timeout_sec)", plugin=self.plugin) from None
        except asyncio.CancelledError:
            raise
        except passthrough:
            raise
        except Exception as exc:
            self.errors += 1
            raise map_error(exc, self.plugin, entity_id) from None

    def stats(self) -> dict[str, int]:
        """Figures for /health."""
        return {"calls": self.calls, "timeouts": self.timeouts, "errors": self.errors}

    def close(self) -> None:
        """Nothing to join: a hung call's daemon thread is abandoned."""
