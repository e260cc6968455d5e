"""The peer table: each peer's client, health probe loop and last complete entity declaration."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import orjson

from ..model.entities import EntitySet
from ..process.waits import wait_event
from .beacon import BeaconReader
from .client import PeerClient, PeerError, base_url
from .fleet import PeerSet
from .health import (
    ERROR_STATUS,
    INVALID_RESPONSE,
    PROBE_BUDGET_S,
    TIMEOUT,
    UNREACHABLE,
    PeerHealth,
    is_health_document,
    merge_delay,
)
from .peer_auth import PeerAuth
from .settings import FederationSettings
from .wire import WireError, load

log = logging.getLogger(__name__)
# Bytes of a forwarded answer from a peer this recent prove it answering (a slow link
# delivers a transfer in bursts: the link emulator's 16 KiB pieces, TCP's window).
TRANSFER_GRACE_S = 4.0

HEALTH_BODY_CAP = 1024 * 1024


@dataclass(eq=False)
class Peer:
    """One peer gateway."""

    name: str
    url: str
    discovered: bool
    client: PeerClient
    health: PeerHealth = field(default_factory=PeerHealth)
    entities: EntitySet | None = None
    etag: str | None = None
    last_refresh: float = float("-inf")
    refreshes: int = 0
    not_modified: int = 0
    refresh_failures: int = 0
    probes: int = 0
    task: asyncio.Task[None] | None = None
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    added: float = field(default_factory=time.monotonic)  # loop.time() clock
    # fan-out answers by path: (status, body bytes, the answer made of them) (fanout.py)
    answers: dict[str, tuple[int, bytes, Any]] = field(default_factory=dict)
    beacon: BeaconReader | None = None  # liveness and ETag stream of an idle peer (beacon.py)
    # when body bytes of a forwarded answer last came from the peer (time.monotonic()): a
    # probe that timed out meanwhile waited behind that transfer on the peer's link
    last_bytes: float = float("-inf")
    probes_passed_by_transfer: int = 0
    # when the peer's HTTP stack last answered a fan-out read (time.monotonic(); fanout.py):
    # with a fresh beacon, it stands in for the full /health probe (beacon.py)
    answered_at: float = float("-inf")
    # a robot whose tunnel closed (connect_in.py): not probed, listed offline until then
    # (time.monotonic()), with the proof its last connection gave (connect_auth.py)
    held_until: float | None = None
    held_proof: str = ""
    expiry: asyncio.TimerHandle | None = None

    @property
    def online(self) -> bool:
        """True while the health check passes."""
        return self.health.online

    def own_headers(self, auth: PeerAuth) -> dict[str, str]:
        """Headers of the gateway's own calls (health, refresh, relay)."""
        value = auth.authorization(caller=None, discovered=self.discovered)
        return {"Authorization": value} if value else {}


def status_since(peer: Peer, wall: float, mono: float) -> dict[str, Any]:
    """`status_since` (ISO time of the last status change, or of the peer's addition),
    `last_reason` while offline and `probes_passed_by_transfer` once some have; `mono` is on
    the probe loop's clock."""
    changed = peer.health.since or peer.added
    at = datetime.fromtimestamp(wall - (mono - changed), timezone.utc)
    out: dict[str, Any] = {"status_since": at.isoformat(timespec="milliseconds")
                           .replace("+00:00", "Z")}
    if not peer.health.online and peer.health.last_reason:
        out["last_reason"] = peer.health.last_reason
    if peer.probes_passed_by_transfer:  # probes held back behind a transfer of the peer's
        out["probes_passed_by_transfer"] = peer.probes_passed_by_transfer
    return out


def held_block(peer: Peer, wall: float, mono: float) -> dict[str, Any]:
    """`tunnel: closed` and `held_until` (ISO time it is removed) for a held peer."""
    if peer.held_until is None:
        return {}
    at = datetime.fromtimestamp(wall + (peer.held_until - mono), timezone.utc)
    return {"tunnel": "closed",
            "held_until": at.isoformat(timespec="seconds").replace("+00:00", "Z")}


class PeerTable:
    """Peers by name; a probe task per peer keeps its status and entity set current."""

    def __init__(self, settings: FederationSettings, auth: PeerAuth, vendor: str,
                 on_change: Callable[[], None]) -> None:
        self.settings = settings
        self.auth = auth
        self.entities_path = f"/x-{vendor}-entities"
        self.beacon_path = f"/x-{vendor}-beacon"
        self.no_fan_out = f"X-{vendor.capitalize()}-No-Fan-Out"
        self.xv = f"x-{vendor}"
        self.on_change = on_change
        self._merge_due: asyncio.TimerHandle | None = None  # a coalesced on_change pending
        self._merged_at = float("-inf")  # loop time the last coalesced on_change ended
        self._merge_cost = 0.0  # and what it took (s)
        self.on_status: Callable[[Peer], None] | None = None  # a peer went online or offline
        self.peers: dict[str, Peer] = {}
        self._expiring: set[asyncio.Task[None]] = set()

    def add(self, name: str, url: str, discovered: bool,
            fixed_headers: dict[str, str] | None = None) -> Peer:
        """Add (or re-point) a peer and start probing it; its entities follow the first probe.
        `fixed_headers` go on every call to it (a robot tunnel's secret)."""
        old = self.peers.get(name)
        if old is not None:
            if old.url == base_url(url) and old.client.fixed_headers == (fixed_headers or {}):
                return old
            del self.peers[name]  # re-pointed (e.g. restarted on another port)
            asyncio.get_running_loop().create_task(self._retire(old))
        client = PeerClient(url, self.settings.budgets, self.settings.max_response_bytes,
                            fixed_headers)
        peer = Peer(name, client.url, discovered, client)
        if old is not None:  # the same peer at a new address: its link is still known, and
            # its last set stays in the view (offline) until its first refresh there
            peer.health.srtt, peer.health.rttvar = old.health.srtt, old.health.rttvar
            peer.entities, peer.etag = old.entities, old.etag
        self.peers[name] = peer
        peer.task = asyncio.get_running_loop().create_task(self._run(peer), name=f"peer-{name}")
        log.info("peer %s at %s added (%s)", name, peer.url,
                 "mDNS" if discovered else "configured")
        return peer

    async def remove(self, name: str) -> None:
        """Stop probing a peer and forget it (its entities leave the fleet view)."""
        peer = self.peers.pop(name, None)
        if peer is None:
            return
        await self._retire(peer)
        log.info("peer %s removed", name)
        self.on_change()

    async def hold(self, name: str, until: float, proof: str = "", cap: int = 1 << 30
                   ) -> Peer | None:
        """A peer whose tunnel closed: no longer probed, listed offline (last_reason
        unreachable) with its last entity set until `until` (time.monotonic()), when it is
        removed unless add() re-pointed it first. At most `cap` peers are held: the one
        expiring first goes to make room."""
        peer = self.peers.get(name)
        if peer is None:
            return None
        held = sorted((p for p in self.peers.values() if p.held_until is not None),
                      key=lambda p: p.held_until or 0.0)
        for old in held[:max(0, len(held) + 1 - cap)]:
            await self.remove(old.name)
        await self._retire(peer)
        peer.beacon = None
        peer.held_until, peer.held_proof = until, proof
        loop = asyncio.get_running_loop()
        peer.expiry = loop.call_later(max(0.0, until - time.monotonic()), self._expire, peer)
        if peer.health.record(False, loop.time(), UNREACHABLE):
            log.info("peer %s is offline (its tunnel closed)", name)
            if self.on_status is not None:
                self.on_status(peer)
        self.on_change()
        return peer

    def held(self, name: str) -> Peer | None:
        """The peer of that name while it is held (hold())."""
        peer = self.peers.get(name)
        return peer if peer is not None and peer.held_until is not None else None

    def _expire(self, peer: Peer) -> None:
        if self.peers.get(peer.name) is peer:
            log.info("peer %s: held offline since its tunnel closed; expired", peer.name)
            task = asyncio.get_running_loop().create_task(self.remove(peer.name))
            self._expiring.add(task)
            task.add_done_callback(self._expiring.discard)

    async def _retire(self, peer: Peer) -> None:
        if peer.expiry is not None:
            peer.expiry.cancel()
        if peer.beacon is not None:
            await peer.beacon.stop()
        if peer.task is not None:
            peer.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await peer.task
        await peer.client.close()

    def _changed(self) -> None:
        """A probe loop saw a change: on_change (a fleet merge, O(peers)) now, or once a burst
        of changes has gone on for a while (merge_delay): 1000 peers joining each started a
        merge of all of them, and the merges held the loop for seconds."""
        if self._merge_due is not None:
            return  # the pending one will see this change too
        loop = asyncio.get_running_loop()
        wait = merge_delay(loop.time(), self._merged_at, self._merge_cost)
        if wait <= 0:
            self._merge_now()
        else:
            self._merge_due = loop.call_later(wait, self._merge_now)

    def _merge_now(self) -> None:
        self._merge_due = None
        started = time.perf_counter()
        self.on_change()
        self._merge_cost = time.perf_counter() - started
        self._merged_at = asyncio.get_running_loop().time()

    async def close(self) -> None:
        """Stop every peer."""
        if self._merge_due is not None:
            self._merge_due.cancel()
            self._merge_due = None
        for name in list(self.peers):
            await self._retire(self.peers.pop(name))

    def suspect(self, name: str) -> None:
        """A call to the peer failed: probe it now rather than at the next tick."""
        peer = self.peers.get(name)
        if peer is not None:
            peer.wake.set()

    def sets(self) -> list[PeerSet]:
        """The declared entity sets of peers synced at least once, by name."""
        return [PeerSet(p.name, p.entities, p.online)
                for p in sorted(self.peers.values(), key=lambda p: p.name)
                if p.entities is not None]

    def health(self) -> list[dict[str, Any]]:
        """The /health `peers` block; x-vendor says since when the status holds (and why)."""
        wall, mono = time.time(), time.monotonic()
        return [{"name": p.name, "url": p.url, "status": p.health.status,
                 self.xv: {**status_since(p, wall, mono),
                           "beacon": p.beacon is not None and p.beacon.fresh(mono),
                           **held_block(p, wall, mono)}}
                for p in sorted(self.peers.values(), key=lambda p: p.name)]

    def stats(self) -> dict[str, Any]:
        """Per-peer counters for diagnostics."""
        return {p.name: {"probes": p.probes, "refreshes": p.refreshes,
                         "not_modified": p.not_modified, "refresh_failures": p.refresh_failures,
                         "failures": p.health.failures, "last_reason": p.health.last_reason}
                for p in self.peers.values()}

    def probe_budget(self, peer: Peer) -> float:
        """The peer's next probe budget: min(health budget, PROBE_BUDGET_S), or what its link
        needs (health.py)."""
        return peer.health.budget(min(self.settings.budgets.health_s, PROBE_BUDGET_S))

    async def probe(self, peer: Peer) -> tuple[bool, str | None]:
        """One health check: (passed, failure reason); a fresh beacon stands in for it."""
        beacon = peer.beacon
        if beacon is not None:
            if beacon.verdict():
                return self._timed_out(peer)
            if beacon.stands_in(time.monotonic(), peer.answered_at):
                return True, None
        peer.probes += 1
        started = time.monotonic()
        try:
            status, body = await peer.client.get_body(
                "/health", budget_s=self.probe_budget(peer),
                headers=peer.own_headers(self.auth), max_bytes=HEALTH_BODY_CAP)
        except PeerError as exc:
            if exc.reason == TIMEOUT:
                return self._timed_out(peer)
            return False, exc.reason
        peer.health.measure(time.monotonic() - started)  # an answer: the link's round trip
        if status != 200:
            return False, ERROR_STATUS
        # A port answering 200 is not yet a gateway: only its health document counts.
        try:
            document = orjson.loads(body)
        except orjson.JSONDecodeError:
            return False, INVALID_RESPONSE
        if not is_health_document(document):
            return False, INVALID_RESPONSE
        return True, None

    def _timed_out(self, peer: Peer) -> tuple[bool, str | None]:
        """A probe (or the beacon) went unanswered within its budget: a timeout, unless a
        forwarded answer of the peer is streaming in (bytes of it came within
        TRANSFER_GRACE_S). Then the peer is answering and its link is full of that transfer
        (a recording downloaded over a slow link), which holds the probe's answer back: the
        probe passes. A peer that stops mid-transfer goes offline TRANSFER_GRACE_S after its
        last bytes (and the transfer itself ends by aggregation.forward_timeout_ms)."""
        if time.monotonic() - peer.last_bytes <= TRANSFER_GRACE_S:
            peer.probes_passed_by_transfer += 1
            return True, None
        return False, TIMEOUT

    async def refresh(self, peer: Peer) -> bool:
        """One conditional entity refresh; True when the peer's set changed.

        A refresh that cannot be read is discarded whole: the last complete set stays.
        """
        beacon = peer.beacon
        if peer.etag and beacon is not None and beacon.fresh(time.monotonic()) \
                and beacon.etag == peer.etag:
            peer.not_modified += 1  # the beacon says unchanged: no request
            return False
        headers = peer.own_headers(self.auth)
        if peer.etag:
            headers["If-None-Match"] = peer.etag
        try:
            answer = await peer.client.get(self.entities_path,
                                           budget_s=self.settings.budgets.timeout_s,
                                           headers=headers)
            if answer.status == 304:
                peer.not_modified += 1
                return False
            if answer.status != 200:
                raise PeerError(ERROR_STATUS, f"status {answer.status}")
            entities, _generation = load(answer.json())
        except (PeerError, WireError) as exc:
            peer.refresh_failures += 1
            log.warning("peer %s: entity refresh discarded (%s); keeping the last set",
                        peer.name, exc)
            return False
        peer.entities = entities
        peer.etag = answer.headers.get("ETag")
        peer.refreshes += 1
        return True

    def _beacon(self, peer: Peer) -> BeaconReader:
        """The peer's beacon reader (made on first use; beacon.py)."""
        if peer.beacon is None:
            def changed() -> None:  # a new ETag: refresh now
                peer.last_refresh = float("-inf")
                peer.wake.set()
            headers = {**peer.own_headers(self.auth), self.no_fan_out: "1"}
            interval_ms = round(self.settings.health_interval_s * 1000)
            peer.beacon = BeaconReader(
                peer.client.session, peer.client.api(f"{self.beacon_path}?interval_ms="
                                                     f"{min(interval_ms, 10000)}"),
                headers, self.settings.health_interval_s, self.settings.budgets.health_s,
                peer.wake.set, changed, lambda: max(PROBE_BUDGET_S, self.probe_budget(peer)))
        return peer.beacon

    async def _run(self, peer: Peer) -> None:
        loop = asyncio.get_running_loop()
        interval = self.settings.health_interval_s
        while True:
            ok, reason = await self.probe(peer)
            now = loop.time()
            changed = peer.health.record(ok, now, reason)
            if changed:
                log.info("peer %s is %s%s", peer.name, peer.health.status,
                         f" ({reason})" if reason else "")
                if self.on_status is not None:
                    self.on_status(peer)
            if ok and (changed or now - peer.last_refresh >= self.settings.refresh_interval_s):
                peer.last_refresh = now
                changed = await self.refresh(peer) or changed
            if changed:
                self._changed()
            if ok and self.settings.beacon:
                self._beacon(peer).start()
            peer.wake.clear()
            delay = peer.health.delay(interval)
            if ok and peer.beacon is not None:
                # a fresh beacon stands in for the probes until the next full one: waking
                # every interval only to find it fresh cost a task and a timer per peer twice
                # a second (0.1 ms/s per idle peer; bench/fleet_sim.py)
                delay = max(delay, peer.beacon.quiet_s(time.monotonic(), peer.answered_at))
            await wait_event(peer.wake, delay)
