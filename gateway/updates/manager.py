"""Drives the update provider: background tasks per package, status, events on the bus."""

from __future__ import annotations

import asyncio
import logging
import re
from typing import TYPE_CHECKING, Any

from ..errors import ApiError, bad_request, vendor_error
from ..events import UPDATES, Event
from ..plugins.api import AlreadyExists, InvalidInput, NotFound, PluginError
from ..plugins.calls import Caller, map_error
from . import machine
from .machine import UpdateStatus

if TYPE_CHECKING:
    from ..http.state import GatewayState

log = logging.getLogger(__name__)

UPDATE_ID = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
KEEP = (NotFound, AlreadyExists, InvalidInput)


def not_found(update_id: str) -> ApiError:
    """404 for an unregistered package."""
    return vendor_error(404, "x-vendor-update-not-found",
                        f"Update package '{update_id}' is not registered", update_id=update_id)


class Reporter:
    """Progress of one running operation; callable from the provider's worker thread."""

    def __init__(self, manager: UpdateManager, update_id: str,
                 loop: asyncio.AbstractEventLoop) -> None:
        self._m, self._id, self._loop = manager, update_id, loop

    def set_progress(self, percent: int) -> None:
        """Overall progress 0..100."""
        self._loop.call_soon_threadsafe(self._m.progress, self._id, percent, None)

    def set_sub_progress(self, items: list[dict[str, Any]]) -> None:
        """Per-step progress: [{name, progress}]."""
        self._loop.call_soon_threadsafe(self._m.progress, self._id, None, list(items))


class UpdateManager:
    """One per gateway with an update provider; every method runs on the event loop."""

    def __init__(self, state: GatewayState, provider: Any, caller: Caller, task_timeout_s: float) -> None:
        self.state = state
        self.provider = provider
        self.call = caller
        self.task_timeout_s = task_timeout_s
        self.statuses: dict[str, UpdateStatus] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}

    # provider calls -------------------------------------------------------------------------
    async def _provider(self, fn: Any, *args: Any, update_id: str | None = None,
                        timeout: float | None = None) -> Any:
        try:
            return await self.call(fn, *args, timeout=timeout, passthrough=KEEP)
        except NotFound:
            raise not_found(update_id or "") from None
        except AlreadyExists as exc:
            raise vendor_error(400, "x-vendor-update-already-exists", exc.message,
                               update_id=update_id) from None
        except InvalidInput as exc:
            raise bad_request(exc.message, update_id=update_id) from None

    def _set(self, update_id: str, status: UpdateStatus) -> None:
        self.statuses[update_id] = status
        bus = self.state.events
        if bus.has_listeners(UPDATES):
            bus.publish(Event(UPDATES, None, update_id, "status", status.body(self.state.xv)))

    def progress(self, update_id: str, percent: int | None, sub: list[Any] | None) -> None:
        """A provider progress report (ignored once the operation finished)."""
        current = self.statuses.get(update_id)
        if current is not None and current.running:
            self._set(update_id, machine.progressed(current, percent, sub))

    # routes' operations ---------------------------------------------------------------------
    async def list(self, filters: dict[str, str]) -> list[str]:
        """Registered package ids."""
        ids = await self._provider(self.provider.list_updates, filters)
        return [str(i) for i in ids or []]

    async def register(self, body: Any) -> str:
        """Register a package; its status starts pending / none."""
        if not isinstance(body, dict):
            raise bad_request("The registration body must be a JSON object")
        uid = body.get("id")
        if not isinstance(uid, str) or not UPDATE_ID.match(uid):
            raise bad_request("Field 'id' must be a non-empty string of letters, digits, '_' "
                              "and '-'", field="id")
        await self._provider(self.provider.register_update, body, update_id=uid)
        self._set(uid, UpdateStatus())
        return uid

    async def get(self, update_id: str) -> Any:
        """The registered metadata."""
        return await self._provider(self.provider.get_update, update_id, update_id=update_id)

    async def status(self, update_id: str) -> UpdateStatus:
        """The package's status; a registered package never operated on reads pending."""
        current = self.statuses.get(update_id)
        if current is None:
            await self.get(update_id)  # 404 for an unregistered package
            current = self.statuses.setdefault(update_id, UpdateStatus())
        return current

    async def start(self, update_id: str, op: str) -> None:
        """Begin prepare, execute or automated in the background."""
        current = await self.status(update_id)
        supported = True
        if op == machine.AUTOMATED:
            supported = bool(await self._provider(self.provider.supports_automated, update_id,
                                                  update_id=update_id))
        try:
            nxt = machine.begin(current, op, supported)
        except machine.TransitionError as exc:
            raise vendor_error(exc.status, exc.vendor_code, exc.message,
                               update_id=update_id) from None
        self._set(update_id, nxt)
        task = asyncio.get_running_loop().create_task(self._run(update_id, op),
                                                      name=f"update-{op}-{update_id}")
        self._tasks[update_id] = task
        task.add_done_callback(lambda _t: self._tasks.pop(update_id, None))

    async def _run(self, update_id: str, op: str) -> None:
        reporter = Reporter(self, update_id, asyncio.get_running_loop())
        steps = [machine.PREPARE, machine.EXECUTE] if op == machine.AUTOMATED else [op]
        for i, step in enumerate(steps):
            current = self.statuses[update_id]
            self._set(update_id, machine.executing(current) if i else machine.started(current))
            fn = self.provider.prepare if step == machine.PREPARE else self.provider.execute
            try:
                await self.call(fn, update_id, reporter, timeout=self.task_timeout_s,
                                what=step, passthrough=(PluginError,))
            except asyncio.CancelledError:
                raise
            except PluginError as exc:
                self._set(update_id, machine.failed(self.statuses[update_id], exc.message))
                return
            except ApiError as exc:
                self._set(update_id, machine.failed(self.statuses[update_id], exc.message))
                return
            except Exception as exc:  # reported in the status
                err = map_error(exc, self.call.plugin, None)
                self._set(update_id, machine.failed(self.statuses[update_id], err.message))
                return
            self._set(update_id, machine.succeeded(self.statuses[update_id]))

    async def delete(self, update_id: str) -> None:
        """Delete a package: 409 while an operation runs; phase deleting, then removed."""
        current = await self.status(update_id)
        try:
            nxt = machine.begin(current, machine.DELETE)
        except machine.TransitionError as exc:
            raise vendor_error(exc.status, exc.vendor_code, exc.message,
                               update_id=update_id) from None
        self._set(update_id, nxt)
        try:
            await self._provider(self.provider.delete_update, update_id, update_id=update_id)
        except ApiError as exc:
            if exc.status == 404:
                self.statuses.pop(update_id, None)
                raise
            self._set(update_id, machine.failed(nxt, exc.message))
            raise
        self.statuses.pop(update_id, None)

    async def close(self) -> None:
        """Cancel running operations."""
        for task in list(self._tasks.values()):
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)
