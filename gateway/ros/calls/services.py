"""Service calls through the bridge: cached clients, a per-service in-flight cap, time budgets.

A ROS service server keeps at most 10 requests queued (KEEP_LAST 10) and silently drops the
rest, so at most `max_in_flight` calls per remote service are outstanding at once; later callers
queue here, each within its own budget. `call_async` has no timeout: the budget is enforced on
the asyncio side, and a request that ran out is removed from the client's pending table.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from ...process.waits import within
from ..dds.bridge import ClientCache, RosBridge
from .cyclone_calls import MATCH_SETTLE_S, CycloneClient, servers_are_cyclone
from .loop_client import LoopClient, client_qos, wakeup
from .replies import forget, send, supports_slots

log = logging.getLogger(__name__)

# How long a call waits for a freshly created client to match its server.
READY_WAIT_S = 2.0
# Idle loop clients are looked for at least this often: each holds an eventfd, so the open
# file count is back at its baseline within ros.service_client_idle_sec + this.
SWEEP_MAX_S = 5.0
# The clock of call budgets: exact on any event loop (uvloop's loop.time() counts whole
# milliseconds, so a budget under 1 ms never looked spent). asyncio's loop.time() is this clock.
budget_now = time.monotonic


class CallError(Exception):
    """A service or action call that did not produce a response."""


class NotAvailable(CallError):
    """The server is not on the graph (its client never matched one)."""


class CallTimeout(CallError):
    """The time budget ran out (queued behind the in-flight cap, or waiting for the answer)."""

    def __init__(self, message: str, budget_s: float) -> None:
        super().__init__(message)
        self.budget_s = budget_s


class CallFailed(CallError):
    """Any other transport failure."""


class InFlightLimiter:
    """One semaphore per remote endpoint name, shared by every caller of that endpoint."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._sems: dict[str, asyncio.Semaphore] = {}
        self.in_flight: dict[str, int] = {}

    def semaphore(self, name: str) -> asyncio.Semaphore:
        """The semaphore of one endpoint."""
        sem = self._sems.get(name)
        if sem is None:
            sem = self._sems[name] = asyncio.Semaphore(self.cap)
        return sem

    @contextlib.asynccontextmanager
    async def slot(self, name: str, timeout: float) -> AsyncIterator[None]:
        """Hold one of the endpoint's slots; CallTimeout when none frees up within timeout."""
        await self.acquire(name, timeout)
        try:
            yield
        finally:
            self.release(name)

    async def acquire(self, name: str, timeout: float) -> None:
        """Take one of the endpoint's slots; CallTimeout when none frees up within timeout."""
        if not await acquire_within(self.semaphore(name), timeout):
            raise CallTimeout(f"{name} did not answer within {timeout:g} s (queued behind "
                              f"{self.cap} calls in flight)", timeout)
        self.in_flight[name] = self.in_flight.get(name, 0) + 1

    def release(self, name: str) -> None:
        """Give back a slot taken with acquire."""
        self.in_flight[name] -= 1
        self._sems[name].release()


async def acquire_within(sem: asyncio.Semaphore, timeout: float) -> bool:
    """Acquire sem within timeout seconds (False when not); no permit leaks on timeout or cancel."""
    if not sem.locked():
        await sem.acquire()  # free: returns without suspending
        return True
    task = asyncio.ensure_future(sem.acquire())
    try:
        await asyncio.wait({task}, timeout=timeout)
    except asyncio.CancelledError:
        if task.done() and not task.cancelled():
            sem.release()
        else:
            task.cancel()
        raise
    if task.done():
        return not task.cancelled() and task.exception() is None
    task.cancel()  # a cancelled acquire passes a pending wake-up on to the next waiter
    return False


async def result_within(fut: asyncio.Future[Any], timeout: float) -> Any:
    """fut's result, or asyncio.TimeoutError once timeout seconds (at least 0) have passed."""
    return await within(fut, max(timeout, 0.0))


async def wait_until(predicate: Any, deadline: float) -> bool:
    """Poll predicate() on the loop (backing off to 50 ms) until true or the budget_now()
    deadline."""
    delay = 0.002
    while True:
        if predicate():
            return True
        left = deadline - budget_now()
        if left <= 0:
            return False
        await asyncio.sleep(min(delay, left))
        delay = min(delay * 2, 0.05)


async def wait_ready(client: Any, is_ready: Any, ready_by: float, deadline: float) -> bool:
    """is_ready() (both ends matched on this side) by ready_by. A client's first request also
    waits until MATCH_SETTLE_S after that match, at most half the budget left: the server's
    side matches this client about then, and a request sent before that is dropped there
    (under CPU load seen as a goal neither accepted nor rejected after a rejoin)."""
    settled_at = getattr(client, "_diag_settled_at", None)
    if settled_at is not None and budget_now() >= settled_at and is_ready():
        return True
    if not is_ready() and not await wait_until(is_ready, ready_by):
        return False
    now = budget_now()
    if settled_at is None:
        settled_at = now + MATCH_SETTLE_S
        with contextlib.suppress(AttributeError):
            client._diag_settled_at = settled_at
    pause = min(settled_at - now, (deadline - now) / 2)
    if pause > 0:
        await asyncio.sleep(pause)
    return True


class ServiceCaller:
    """Calls remote services; clients live on the bridge's node and are cached per (name, type).

    With replies="loop" (and rcl's response hook available) a client's responses are taken on
    the event loop (ros/calls/loop_client.py); otherwise the call node's executor takes them.

    A loop client unused for `idle_close_s` (0: never) is closed: every response of its
    service, whoever called, reaches each client's reader, so a client kept for one call would
    cost the gateway CPU for every later call other nodes make (about 36 us each). The next
    call makes a new client, which first waits for the server to match.
    """

    def __init__(self, bridge: RosBridge, max_in_flight: int = 8,
                 replies: str = "loop", idle_close_s: float = 0.0) -> None:
        self.bridge = bridge
        self.limiter = InFlightLimiter(max_in_flight)
        self._clients = ClientCache(bridge)
        self._hook = wakeup() if replies == "loop" else None
        self._loop_clients: list[LoopClient] = []
        self._cyclone_clients: list[CycloneClient] = []
        self.idle_close_s = idle_close_s
        self._sweep_timer: asyncio.TimerHandle | None = None
        self.calls = 0
        self.timeouts = 0
        self.closed_idle = 0
        self.sweeps = 0
        on_rejoin = getattr(bridge, "on_rejoin", None)
        if on_rejoin is not None:  # loop clients are bare rcl clients of the old node
            on_rejoin(self._close_loop_clients)

    def _close_loop_clients(self) -> None:
        """Close every loop client (a rejoin: the next call makes one on the new node)."""
        clients: list[LoopClient | CycloneClient] = [*self._loop_clients, *self._cyclone_clients]
        for client in clients:
            try:
                client.close()
            except Exception:
                log.debug("closing the client of %s at a rejoin", client.name, exc_info=True)
        self._loop_clients.clear()
        self._cyclone_clients.clear()

    def health(self) -> dict[str, int]:
        """The x-vendor-service-calls block of /health."""
        return {"calls": self.calls, "timeouts": self.timeouts,
                "loop_clients": len(self._loop_clients), "closed_idle": self.closed_idle,
                "cyclone_clients": len(self._cyclone_clients)}

    def _schedule_sweep(self) -> None:
        if self.idle_close_s > 0 and self._sweep_timer is None and self._loop_clients:
            self._sweep_timer = asyncio.get_running_loop().call_later(
                min(self.idle_close_s / 2, SWEEP_MAX_S), self._sweep)

    def _sweep(self) -> None:
        """Close the loop clients no call has used for idle_close_s."""
        self._sweep_timer = None
        self.sweeps += 1
        now = time.monotonic()
        # list() and remove(): a client made meanwhile is appended by a graph pool thread
        for client in list(self._loop_clients):
            if client.users or client.pending or now - client.last_used < self.idle_close_s:
                continue
            self._loop_clients.remove(client)
            self._clients.discard(client)
            try:
                client.close()
            except Exception:
                log.debug("closing the idle client of %s", client.name, exc_info=True)
            self.closed_idle += 1
            log.debug("service client of %s closed after %g s unused", client.name,
                      self.idle_close_s)
        self._schedule_sweep()

    async def client(self, name: str, type_name: str) -> Any:
        """The cached client of a service, created on first use (off the loop)."""
        client = await self._clients.get(name, type_name, self._create_client,
                                         f"creating a client for {name}")
        if type(client) is LoopClient:
            client.attach(asyncio.get_running_loop())
            self._schedule_sweep()
        return client

    def _create_client(self, node: Any, cls: Any, name: str) -> Any:
        """A client speaking rmw_cyclonedds's requests when every server of the service is a
        Cyclone DDS participant (cyclone_calls.py); else a loop client when the hook works,
        else a plain rclpy client (graph pool thread)."""
        if servers_are_cyclone(node, name):
            type_name = f"{cls.__module__.split('.')[0]}/srv/{cls.__name__}"
            cyclone = CycloneClient(node, cls, name, type_name)
            self._cyclone_clients.append(cyclone)
            log.info("service %s is served through Cyclone DDS: called with rmw_cyclonedds's "
                     "request header", name)
            return cyclone
        hook = self._hook
        if hook is not None:
            try:
                client = LoopClient(node, cls, name, hook)
            except OSError as exc:  # e.g. an rmw without the response callback
                log.info("service responses go through the executor: %s", exc)
                self._hook = None
            else:
                self._loop_clients.append(client)
                return client
        return node.create_client(cls, name, qos_profile=client_qos())

    async def call(self, name: str, type_name: str, request: Any, timeout: float) -> Any:
        """The response to one request; CallTimeout, NotAvailable or CallFailed otherwise."""
        deadline = budget_now() + timeout
        limiter = self.limiter
        try:
            await limiter.acquire(name, timeout)
            try:
                return await self._call(name, type_name, request, timeout, deadline)
            finally:
                limiter.release(name)
        except CallTimeout:
            self.timeouts += 1
            raise

    async def _call(self, name: str, type_name: str, request: Any, timeout: float,
                    deadline: float) -> Any:
        try:
            client = self._clients.ready(name, type_name) or await self.client(name, type_name)
        except CallError:
            raise
        except Exception as exc:
            raise CallFailed(f"cannot create a client for {name}: {exc}") from exc
        if type(client) is CycloneClient:
            return await self._call_cyclone(client, name, request, timeout, deadline)
        loop_client = type(client) is LoopClient
        if loop_client:
            client.users += 1  # not closed as idle while this call holds it
            client.last_used = time.monotonic()
        try:
            ready_by = min(deadline, budget_now() + READY_WAIT_S)
            if not await wait_ready(client, client.service_is_ready, ready_by, deadline):
                if budget_now() >= deadline:
                    raise CallTimeout(f"service {name} did not answer within {timeout:g} s",
                                      timeout)
                raise NotAvailable(f"service {name} is not available on the ROS graph")
            if budget_now() >= deadline:  # spent already: an answer taken first must not count
                raise CallTimeout(f"service {name} did not answer within {timeout:g} s",
                                  timeout)
            if loop_client:
                try:
                    seq, afut = client.send(request)
                except Exception as exc:
                    raise CallFailed(f"calling {name} failed: {exc}") from exc
                self.calls += 1
                return await _answer(afut, client.forget, seq, name, timeout, deadline)
            hub = self.bridge.replies
            if hub is None or not supports_slots(client):
                return await self._call_future(client, name, request, timeout, deadline)
            try:
                reply = send(client, request, hub)
            except Exception as exc:
                raise CallFailed(f"calling {name} failed: {exc}") from exc
            self.calls += 1
            return await _answer(reply.afut, lambda r: forget(client, r), reply, name,
                                 timeout, deadline)
        finally:
            if loop_client:
                client.users -= 1

    async def _call_cyclone(self, client: CycloneClient, name: str, request: Any,
                            timeout: float, deadline: float) -> Any:
        """A call through Cyclone DDS's request format; the client is dropped when its server
        does not answer (the next call looks at the servers again)."""
        if not client.service_is_ready():
            ready_by = min(deadline, budget_now() + READY_WAIT_S + MATCH_SETTLE_S)
            if not await wait_until(client.service_is_ready, ready_by):
                self._drop_cyclone(client)
                if budget_now() >= deadline:
                    raise CallTimeout(f"service {name} did not answer within {timeout:g} s",
                                      timeout)
                raise NotAvailable(f"service {name} is not available on the ROS graph")
        self.calls += 1
        try:
            return await client.call(request, deadline, budget_now)
        except asyncio.TimeoutError:
            if not client.pending:  # no other call waits on it
                self._drop_cyclone(client)
            raise CallTimeout(f"service {name} did not answer within {timeout:g} s",
                              timeout) from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise CallFailed(f"calling {name} failed: {exc}") from exc

    def _drop_cyclone(self, client: CycloneClient) -> None:
        if client in self._cyclone_clients:
            self._cyclone_clients.remove(client)
            self._clients.discard(client)
            client.close()

    async def _call_future(self, client: Any, name: str, request: Any, timeout: float,
                           deadline: float) -> Any:
        """The plain rclpy path (call_async and a wrapped future), for clients without slots."""
        try:
            rfut = client.call_async(request)
        except Exception as exc:
            raise CallFailed(f"calling {name} failed: {exc}") from exc
        self.calls += 1
        try:
            return await result_within(self.bridge.wrap_future(rfut), deadline - budget_now())
        except asyncio.TimeoutError:
            client.remove_pending_request(rfut)
            raise CallTimeout(f"service {name} did not answer within {timeout:g} s",
                              timeout) from None
        except asyncio.CancelledError:
            client.remove_pending_request(rfut)
            raise
        except Exception as exc:
            raise CallFailed(f"calling {name} failed: {exc}") from exc

    def close(self) -> None:
        """Destroy the loop clients, forget the others (destroyed with the bridge's node)."""
        if self._sweep_timer is not None:
            self._sweep_timer.cancel()
            self._sweep_timer = None
        clients: list[LoopClient | CycloneClient] = [*self._loop_clients, *self._cyclone_clients]
        for client in clients:
            try:
                client.close()
            except Exception:
                log.debug("closing the client of %s", client.name, exc_info=True)
        self._loop_clients.clear()
        self._cyclone_clients.clear()
        self._clients.clear()


async def _answer(afut: asyncio.Future[Any], forget_call: Any, key: Any, name: str,
                  timeout: float, deadline: float) -> Any:
    """afut's response by the budget_now() deadline; forget_call(key) when it is not awaited."""
    timer = asyncio.get_running_loop().call_later(max(0.0, deadline - budget_now()), _expire,
                                                  afut)
    try:
        return await afut
    except asyncio.TimeoutError:
        forget_call(key)
        raise CallTimeout(f"service {name} did not answer within {timeout:g} s",
                          timeout) from None
    except asyncio.CancelledError:
        forget_call(key)
        raise
    finally:
        timer.cancel()


def _expire(afut: asyncio.Future[Any]) -> None:
    if not afut.done():
        afut.set_exception(asyncio.TimeoutError())
