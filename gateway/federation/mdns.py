"""mDNS announce and browse with python-zeroconf (the only importer of zeroconf).

Bound to the configured interfaces (`aggregation.mdns_interfaces`, loopback by default). A
peer that leaves cleanly sends a goodbye and is removed; a crashed one is reported only
after ~19 minutes, so the peer's own health probes mark it offline long before that.
With `aggregation.fleet_secret`, a peer is reported found only once it proved the secret at
its announced address (fleet_proof.py, ProofGate in mdns_trust.py: a bounded set of unproved
candidates, a new announcement asked at once in an older one's place). Starting runs in the
background: a start that fails or hangs (zeroconf not running within 9 s on a loaded host) is
logged and retried with backoff (START_BACKOFF_S), never fatal to the gateway.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson
from zeroconf import (
    InterfaceChoice,
    IPVersion,
    NotRunningException,
    ServiceStateChange,
    current_time_millis,
)
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

from .client import PeerClient, PeerError
from .fleet_proof import PATH, PROOF_BODY_CAP, new_nonce, proves
from .mdns_trust import CHECK, MAX_UNPROVED, PASS, Key, ProofGate
from .settings import Budgets, MdnsOptions, peer_name

log = logging.getLogger(__name__)

RESOLVE_TIMEOUT_MS = 3000
# A name whose records did not come within RESOLVE_TIMEOUT_MS (a loaded host or LAN) is
# resolved again after these waits, the last one repeating: its announcement is in the
# browser's cache, so no new one would tell this gateway about it again. At most
# MAX_UNRESOLVED names wait at once (names come from the LAN); others are logged and left.
RESOLVE_RETRY_S = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)
MAX_UNRESOLVED = 256
# A start that fails (zeroconf not running within its own 9 s on a loaded host, a socket
# error) is retried after these waits, the last one repeating: mDNS is optional, the gateway
# serves meanwhile. One attempt is cut at START_ATTEMPT_S (zeroconf's wait plus its probing).
START_BACKOFF_S = (1.0, 2.0, 5.0, 10.0, 30.0)
START_ATTEMPT_S = 30.0
# Test hook (with DIAG_GATEWAY_TEST_HOOKS=1 only, as gateway/ros/rejoin/testhooks.py): the first N
# starts fail as zeroconf's do on a loaded host (`always`: every one).
TEST_HOOKS_ENV = "DIAG_GATEWAY_TEST_HOOKS"
TEST_FAILURES_ENV = "DIAG_GATEWAY_TEST_MDNS_START_FAILURES"
ADDRESS_CHECK_S = 1.0  # how often an announcing gateway on every interface checks its addresses
# How often a browsing gateway asks again for the service (one query listing the peers it
# knows, so only the others answer). zeroconf's browser asks four times in its first 9 s and
# then only to refresh known records: a peer whose announcement was lost (a busy or lossy
# LAN) would otherwise stay unseen for the hour its records live.
REQUERY_S = 5.0
FLOOD_WARNING = " flood"  # ProofGate.warn key of the flood warning (no peer name has a space)


def interface_addresses(entries: tuple[str, ...]) -> list[str] | InterfaceChoice:
    """IPv4 addresses for interface entries (addresses or names); `all` for every one."""
    if not entries or any(e.strip().lower() == "all" for e in entries):
        return InterfaceChoice.All
    out: list[str] = []
    names: dict[str, list[str]] | None = None
    for entry in entries:
        entry = entry.strip()
        try:
            out.append(str(ipaddress.IPv4Address(entry)))
            continue
        except ValueError:
            pass
        if names is None:
            import psutil  # noqa: PLC0415 - psutil only when no interface is named

            names = {n: [a.address for a in addrs if a.family == socket.AF_INET]
                     for n, addrs in psutil.net_if_addrs().items()}
        if entry not in names:
            raise ValueError(f"setting 'aggregation.mdns_interfaces': no interface {entry!r}")
        out.extend(names[entry])
    return out


def announced_addresses(host: str, interfaces: list[str] | InterfaceChoice) -> list[str]:
    """Addresses to announce: the bind address, else the mDNS interfaces' addresses (also
    for a loopback bind address when mDNS is on other interfaces: a gateway behind a local
    proxy or relay, reached on the LAN through `aggregation.announce_port`)."""
    if host and host not in ("0.0.0.0", "::", ""):
        try:
            bound = str(ipaddress.IPv4Address(host))
        except ValueError:
            bound = socket.gethostbyname(host)
        if not ipaddress.IPv4Address(bound).is_loopback or (
                isinstance(interfaces, list)
                and all(ipaddress.IPv4Address(a).is_loopback for a in interfaces)):
            return [bound]
    if isinstance(interfaces, list):
        return interfaces
    import psutil  # noqa: PLC0415 - psutil only when no interface is named

    return [a.address for addrs in psutil.net_if_addrs().values() for a in addrs
            if a.family == socket.AF_INET and not a.address.startswith("127.")]


def loopback_only_warning(opts: MdnsOptions,
                          interfaces: list[str] | InterfaceChoice) -> str | None:
    """A warning when announce or discover is on but mDNS is bound to loopback only."""
    if not (opts.announce or opts.discover) or not isinstance(interfaces, list):
        return None
    if not all(ipaddress.IPv4Address(a).is_loopback for a in interfaces):
        return None
    what = " and ".join(w for w, on in (("announce", opts.announce),
                                         ("discover", opts.discover)) if on)
    return (f"mDNS {what} is bound to loopback only ({', '.join(interfaces)}): no other host "
            "on the LAN will see this gateway or be seen by it; set "
            "aggregation.mdns_interfaces to the robot's LAN interface (e.g. [eth0]) or [all]")


def start_delay(failures: int) -> float:
    """Seconds to wait after `failures` (>= 1) failed starts in a row."""
    return START_BACKOFF_S[min(failures, len(START_BACKOFF_S)) - 1]


def injected_failures(env: Mapping[str, str]) -> int:
    """Starts the test hook makes fail (0 without DIAG_GATEWAY_TEST_HOOKS=1)."""
    if env.get(TEST_HOOKS_ENV) != "1":
        return 0
    value = env.get(TEST_FAILURES_ENV, "").strip()
    if value == "always":
        return 1 << 30
    return int(value) if value.isdigit() else 0


async def keep_starting(attempt: Callable[[], Awaitable[None]],
                        undo: Callable[[], Awaitable[None]], what: str,
                        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> int:
    """Run `attempt` (each cut at START_ATTEMPT_S) until it succeeds; after each failure
    `undo` its leftovers, log one line and wait start_delay(). The failures before success."""
    failures = 0
    while True:
        try:
            await asyncio.wait_for(attempt(), START_ATTEMPT_S)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # NotRunningException, OSError, a timeout: all retried
            failures += 1
            delay = start_delay(failures)
            log.warning("%s: start failed (attempt %d: %s); retrying in %.0f s (the gateway "
                        "serves meanwhile)", what, failures,
                        f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__,
                        delay)
            with contextlib.suppress(Exception):
                await undo()
            await sleep(delay)
            continue
        if failures:
            log.info("%s: started after %d failed attempts", what, failures)
        return failures


def instance_of(full_name: str, service: str) -> str:
    """The instance part of `<instance>.<service>`."""
    if full_name.endswith("." + service):
        return full_name[: -len(service) - 1]
    return full_name.split(".", 1)[0]


async def challenge(url: str, name: str, secret: str, budgets: Budgets,
                    vendor: str) -> str | None:
    """Ask the peer at `url` to prove it holds the secret as `name`: None when it did, else
    the reason."""
    nonce = new_nonce()
    client = PeerClient(url, budgets, PROOF_BODY_CAP)
    try:
        status, body = await client.get_body(
            f"{PATH.format(vendor=vendor)}?nonce={nonce}", budget_s=budgets.timeout_s,
            headers={}, max_bytes=PROOF_BODY_CAP)
    except PeerError as exc:
        return f"no proof ({exc.reason})"
    finally:
        await client.close()
    if status != 200:
        return f"no proof (status {status})"
    try:
        answer = orjson.loads(body)
    except orjson.JSONDecodeError:
        return "no proof (not JSON)"
    if not proves(secret, nonce, name, answer):
        return "wrong proof"
    return None


class Mdns:
    """Announces this gateway and reports peers found and lost."""

    def __init__(self, opts: MdnsOptions, host: str, port: int,
                 found: Callable[[str, str], None],
                 lost: Callable[[str], Awaitable[None]]) -> None:
        self.opts = opts
        self.host = host
        self.port = port
        self.found = found
        self.lost = lost
        self.azc: AsyncZeroconf | None = None
        self.info: AsyncServiceInfo | None = None
        self.browser: AsyncServiceBrowser | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.known: dict[str, str] = {}  # full service name -> peer name
        self.addresses: list[str] = []
        self._follow: asyncio.Task[None] | None = None
        self._requery: asyncio.Task[None] | None = None
        self.gate = ProofGate(MAX_UNPROVED, opts.max_per_address)
        self._proving: dict[Key, asyncio.Task[None]] = {}  # (name, URL) being asked
        # full service name -> (resolves failed, the timer of the next one)
        self._unresolved: dict[str, tuple[int, asyncio.TimerHandle]] = {}
        self._evicted = 0  # gate.evictions already seen
        self._starting: asyncio.Task[int] | None = None
        self.started = False  # announcing and/or browsing
        self._fail_starts = injected_failures(os.environ)

    async def start(self) -> None:
        """Start announcing and/or browsing in the background (an unknown interface is a
        settings error); a slow or failing start is retried with backoff, never fatal."""
        interfaces = interface_addresses(self.opts.interfaces)
        warning = loopback_only_warning(self.opts, interfaces)
        if warning:
            log.warning(warning)
        self._starting = asyncio.get_running_loop().create_task(
            keep_starting(lambda: self._start_once(interfaces), self._close_zeroconf, "mDNS"),
            name="mdns-start")
        self._starting.add_done_callback(self._started)

    def _started(self, task: asyncio.Task[int]) -> None:
        self.started = not task.cancelled() and task.exception() is None

    async def _start_once(self, interfaces: list[str] | InterfaceChoice) -> None:
        """One attempt: a zeroconf instance registering the service and/or browsing."""
        if self._fail_starts > 0:
            self._fail_starts -= 1
            raise NotRunningException("test hook: zeroconf did not start")
        self.azc = AsyncZeroconf(interfaces=interfaces, ip_version=IPVersion.V4Only)
        if self.opts.announce:
            self.addresses = announced_addresses(self.host, interfaces)
            port = self.opts.announce_port or self.port
            self.info = AsyncServiceInfo(
                self.opts.service, f"{self.opts.name}.{self.opts.service}",
                addresses=[socket.inet_aton(a) for a in self.addresses], port=port,
                properties={"name": self.opts.name, "api": "/api/v1"})
            await (await self.azc.async_register_service(self.info))
            log.info("mDNS: announced %s on %s:%d", self.opts.name, ",".join(self.addresses),
                     port)
            if not isinstance(interfaces, list):  # every interface: follow address changes
                self._follow = asyncio.get_running_loop().create_task(self._follow_addresses())
        if self.opts.discover:
            self.browser = AsyncServiceBrowser(self.azc.zeroconf, self.opts.service,
                                               handlers=[self._on_change])
            self._requery = asyncio.get_running_loop().create_task(self._ask_again())

    async def _ask_again(self) -> None:
        """Ask for the service every REQUERY_S with the known answers (peers not yet seen)."""
        while True:
            await asyncio.sleep(REQUERY_S)
            browser = self.browser
            if browser is not None:
                browser.query_scheduler.async_send_ready_queries(
                    False, current_time_millis(), {self.opts.service})

    async def _follow_addresses(self) -> None:
        """Re-announce on the new addresses when the host's addresses change (DHCP, roaming)."""
        while True:
            await asyncio.sleep(ADDRESS_CHECK_S)
            now = announced_addresses(self.host, InterfaceChoice.All)
            if sorted(now) == sorted(self.addresses) or not now:
                continue
            log.info("mDNS: addresses changed (%s -> %s): announcing again",
                     ",".join(self.addresses), ",".join(now))
            await self._close_zeroconf()
            try:
                await asyncio.wait_for(self._open(InterfaceChoice.All, now), START_ATTEMPT_S)
            except Exception as exc:  # retried at the next check (the addresses differ)
                log.warning("mDNS: announcing again failed (%s); retrying",
                            type(exc).__name__)
                with contextlib.suppress(Exception):
                    await self._close_zeroconf()
                self.addresses = []

    async def _open(self, interfaces: list[str] | InterfaceChoice, addresses: list[str]) -> None:
        """A new zeroconf instance announcing (and browsing) on the current addresses."""
        assert self.info is not None
        self.azc = AsyncZeroconf(interfaces=interfaces, ip_version=IPVersion.V4Only)
        self.addresses = addresses
        self.info = AsyncServiceInfo(
            self.opts.service, self.info.name,
            addresses=[socket.inet_aton(a) for a in addresses], port=self.info.port,
            properties={"name": self.opts.name, "api": "/api/v1"})
        await (await self.azc.async_register_service(self.info))
        if self.opts.discover:
            self.browser = AsyncServiceBrowser(self.azc.zeroconf, self.opts.service,
                                               handlers=[self._on_change])

    async def _close_zeroconf(self) -> None:
        if self.browser is not None:
            await self.browser.async_cancel()
            self.browser = None
        if self.azc is not None:
            if self.info is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(
                        await self.azc.async_unregister_service(self.info), 2.0)
            azc, self.azc = self.azc, None
            await azc.async_close()

    def _on_change(self, zeroconf: Any, service_type: str, name: str,
                   state_change: ServiceStateChange) -> None:
        task = asyncio.get_running_loop().create_task(self._handle(name, state_change))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _handle(self, name: str, change: ServiceStateChange) -> None:
        instance = peer_name(instance_of(name, self.opts.service))
        if change is ServiceStateChange.Removed:
            self._forget_unresolved(name)
            known = self.known.pop(name, None)
            if self.opts.fleet_secret:
                self.gate.left(instance)
                for key in [k for k in self._proving if k[0] == instance]:
                    self._stop_asking(key)
            if known is not None:
                log.info("mDNS: %s left", known)
                await self.lost(known)
            return
        if self.azc is None:
            return  # closed, or being opened again (addresses changed)
        info = AsyncServiceInfo(self.opts.service, name)
        if not await info.async_request(self.azc.zeroconf, RESOLVE_TIMEOUT_MS):
            self._resolve_failed(name)
            return
        self._forget_unresolved(name)
        addresses = info.parsed_addresses(IPVersion.V4Only)
        if not addresses or not info.port:
            return
        url = f"{self.opts.scheme}://{addresses[0]}:{info.port}"
        if self.opts.fleet_secret and instance != self.opts.name:
            self._check(name, instance, url)
            return
        self.known[name] = instance
        self.found(instance, url)

    def _resolve_failed(self, name: str) -> None:
        """Ask for the name's records again later (RESOLVE_RETRY_S), within MAX_UNRESOLVED."""
        failed = self._unresolved[name][0] + 1 if name in self._unresolved else 1
        if failed == 1 and len(self._unresolved) >= MAX_UNRESOLVED:
            log.warning("mDNS: %s did not resolve; %d other names wait to be resolved again, "
                        "so this one is not (it is seen again when it announces anew)",
                        name, len(self._unresolved))
            return
        wait = RESOLVE_RETRY_S[min(failed, len(RESOLVE_RETRY_S)) - 1]
        log.info("mDNS: %s did not resolve; asking again in %.0f s", name, wait)
        timer = asyncio.get_running_loop().call_later(
            wait, self._on_change, None, self.opts.service, name, ServiceStateChange.Updated)
        self._unresolved[name] = (failed, timer)

    def _forget_unresolved(self, name: str) -> None:
        entry = self._unresolved.pop(name, None)
        if entry is not None:
            entry[1].cancel()

    def _check(self, name: str, instance: str, url: str) -> None:
        """Report the peer found if it proved the secret at `url`, else ask it (once at a
        time, in the place of an older unproved announcement when all are taken)."""
        decision = self.gate.announced(instance, url, asyncio.get_running_loop().time())
        if decision == PASS:
            self.known[name] = instance
            self.found(instance, url)
        elif decision == CHECK:
            self._proving[(instance, url)] = asyncio.get_running_loop().create_task(
                self._prove(name, instance, url))
        self._settle()

    def _settle(self) -> None:
        """Stop asking the announcements the gate gave up (evicted, expired)."""
        dropped = self.gate.take_dropped()
        for key in dropped:
            if self.gate.asked(*key):
                continue  # announced again since
            self._stop_asking(key)
        evicted, self._evicted = self.gate.evictions > self._evicted, self.gate.evictions
        if evicted and self.gate.warn(FLOOD_WARNING, asyncio.get_running_loop().time()):
            log.warning("mDNS: %d unproved announcements are being asked; older ones give "
                        "their places to newer ones (%d so far: a flood of names?)",
                        len(self.gate.pending), self.gate.evictions)

    def _stop_asking(self, key: Key) -> None:
        task = self._proving.pop(key, None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    async def _prove(self, name: str, instance: str, url: str) -> None:
        """Challenge the peer at `url` until it proves the secret (with backoff), or until
        the gate gives its place up (evicted, expired)."""
        loop = asyncio.get_running_loop()
        budgets = Budgets(timeout_s=self.opts.timeout_s)
        key = (instance, url)
        try:
            while True:
                try:  # one challenge ends within its budgets (connect, read)
                    why = await asyncio.wait_for(
                        challenge(url, instance, self.opts.fleet_secret, budgets,
                                  self.opts.vendor), 2.0 * budgets.timeout_s + 1.0)
                except asyncio.TimeoutError:
                    why = "no proof (timed out)"
                if why is None:
                    break
                delay = self.gate.failed(instance, url, loop.time())
                if delay is None:  # its place was given to a newer announcement, or expired
                    log.debug("mDNS: %s at %s no longer asked (%s)", instance, url, why)
                    return
                if self.gate.warn(instance, loop.time()):
                    log.warning("mDNS: %s at %s not added: %s; asked again with backoff",
                                instance, url, why)
                await asyncio.sleep(delay)
        finally:
            if self._proving.get(key) is asyncio.current_task():
                del self._proving[key]
        self.gate.passed(instance, url)
        log.info("mDNS: %s at %s proved the fleet secret", instance, url)
        self.known[name] = instance
        self.found(instance, url)

    async def stop(self) -> None:
        """Send goodbyes and close."""
        for task in (self._starting, self._follow, self._requery):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        for name in list(self._unresolved):
            self._forget_unresolved(name)
        for task in list(self._tasks):
            task.cancel()
        proving = list(self._proving.values())
        for task in proving:
            task.cancel()
        await asyncio.gather(*proving, return_exceptions=True)  # their clients close
        await self._close_zeroconf()
