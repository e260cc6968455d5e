"""What an mDNS announcement or goodbye may change (pure): nothing about a peer that answers.

mDNS carries no credentials: anyone on the link can announce any name at any address, or
send a goodbye for it. So an announcement moves a discovered peer to a new address only once
its current address stops answering its health probe, and a goodbye removes it only if it
stops answering soon after (GOODBYE_WINDOW_S); a peer that keeps answering stays where it
is. New names are capped in all and per announced host address.

With `aggregation.fleet_secret` (ProofGate), an announcement reaches those rules only once
the peer proved the secret at the announced address (fleet_proof.py): a name or a new
address nobody proved is not used at all, and the caps count proved peers only. Unproved
candidates hold a bounded number of places, and a new announcement is always asked at once
in the place of an older unproved one, so names that never prove cannot keep a real robot
from being asked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

ADD, REPOINT, HOLD, REMOVE = "add", "repoint", "hold", "remove"
# A goodbye holds this long: a true one's gateway stops answering within it (a slow shutdown).
GOODBYE_WINDOW_S = 30.0


def host_of(url: str) -> str:
    """The host part of a peer URL."""
    return urlsplit(url).hostname or ""


def refusal(name: str, url: str, discovered: Mapping[str, str], max_peers: int,
            max_per_address: int) -> str | None:
    """Why a newly announced peer is refused (None: accepted); `discovered` maps the
    discovered peers to their URLs."""
    others = {n: u for n, u in discovered.items() if n != name}
    if len(others) >= max_peers:
        return f"setting 'aggregation.max_discovered_peers' ({max_peers}) reached"
    host = host_of(url)
    if sum(1 for u in others.values() if host_of(u) == host) >= max_per_address:
        return (f"setting 'aggregation.max_discovered_per_address' ({max_per_address}) "
                f"reached for {host}")
    return None


class MdnsTrust:
    """Announcements and goodbyes held back while the peer they concern still answers."""

    def __init__(self) -> None:
        self.moves: dict[str, str] = {}  # peer -> the address an announcement moves it to
        self.goodbyes: dict[str, float] = {}  # peer -> when its goodbye came

    def announced(self, name: str, url: str, current: str | None, online: bool) -> str:
        """ADD (a new peer or its known address), REPOINT (the peer no longer answers at
        `current`) or HOLD (it answers: moved only once it stops)."""
        if current is None or current == url:
            self.moves.pop(name, None)  # its own address again: nothing to move
            return ADD
        if not online:
            self.moves.pop(name, None)
            return REPOINT
        self.moves[name] = url
        return HOLD

    def goodbye(self, name: str, online: bool, now: float) -> str:
        """REMOVE (the peer does not answer) or HOLD (removed if it stops within
        GOODBYE_WINDOW_S)."""
        if not online:
            self.forget(name)
            return REMOVE
        self.goodbyes[name] = now
        return HOLD

    def offline(self, name: str, now: float) -> tuple[str, str] | None:
        """What to do as peer `name` stops answering: (REMOVE, "") after a recent goodbye,
        (REPOINT, url) after an announcement elsewhere, else None."""
        said = self.goodbyes.pop(name, None)
        if said is not None and now - said <= GOODBYE_WINDOW_S:
            self.moves.pop(name, None)
            return REMOVE, ""
        url = self.moves.pop(name, None)
        return (REPOINT, url) if url else None

    def forget(self, name: str) -> None:
        """Drop what is held for a peer that left."""
        self.moves.pop(name, None)
        self.goodbyes.pop(name, None)


# aggregation.fleet_secret: what an announcement needs before the primary uses it.
PASS, CHECK, BUSY = "pass", "check", "busy"
PROOF_RETRY_MIN_S = 1.0  # a peer announces before it listens: asked again soon, then rarer
PROOF_RETRY_MAX_S = 30.0
PROOF_EXPIRE_S = 600.0  # a candidate still unproved this long after its announcement is dropped
MAX_UNPROVED = 256  # unproved candidates being asked at once (a place each)
PROOF_WARN_S = 30.0  # one warning per name this often
MAX_WARNED = 1024  # names remembered for that; past it (a flood within 30 s), none logged
Key = tuple[str, str]  # (name, announced URL)


@dataclass
class Candidate:
    """An announced (name, URL) being asked for its proof."""

    since: float  # when it was announced (got its place)
    failures: int = 0  # challenges it failed (0: its first one is still running)


class ProofGate:
    """Which announced (name, URL) pairs proved the fleet secret, which are being asked, and
    when to ask again.

    Unproved candidates hold one of `max_pending` places, at most `max_per_address` per
    announced host. A new announcement is always asked at once: it takes a free place, else
    the place of the candidate that failed most often (then the oldest), else, when every
    place holds a first challenge still running, the oldest of those. So names that never
    prove cannot keep a new one from being asked, and a real robot is admitted unless
    `max_pending` newer names are announced while it answers its challenge. Candidates
    expire PROOF_EXPIRE_S after their announcement. Evicted and expired pairs are listed in
    `dropped` for the caller to stop asking. Proved peers are not counted here
    (aggregation.max_discovered_peers caps them).
    """

    def __init__(self, max_pending: int, max_per_address: int) -> None:
        self.max_pending = max_pending
        self.max_per_address = max_per_address
        self.proved: dict[str, str] = {}  # name -> the URL it proved at
        self.pending: dict[Key, Candidate] = {}  # insertion order: oldest first
        self.dropped: list[Key] = []  # no longer asked: evicted or expired
        self.evictions = 0
        self.warned: dict[str, float] = {}  # name -> when its last warning was logged

    def announced(self, name: str, url: str, now: float) -> str:
        """PASS (proved at `url`), BUSY (being asked there) or CHECK (ask now: it took a
        place, perhaps another's: see `take_dropped`)."""
        if self.proved.get(name) == url:
            return PASS
        key = (name, url)
        if key in self.pending:
            return BUSY
        self._expire(now)
        host = host_of(url)
        if sum(1 for _, u in self.pending if host_of(u) == host) >= self.max_per_address:
            self._evict(host)
        if len(self.pending) >= self.max_pending:
            self._evict(None)
        self.pending[key] = Candidate(now)
        return CHECK

    def _expire(self, now: float) -> None:
        for key, cand in list(self.pending.items()):
            if now - cand.since > PROOF_EXPIRE_S:
                del self.pending[key]
                self.dropped.append(key)

    def _evict(self, host: str | None) -> None:
        """Give up one candidate (at `host`, or anywhere): the most failed challenges, then
        the oldest; the oldest first challenge when none failed."""
        found: Key | None = None
        best: tuple[int, float] | None = None
        for key, cand in self.pending.items():
            if host is not None and host_of(key[1]) != host:
                continue
            rank = (-cand.failures, cand.since)
            if best is None or rank < best:
                best, found = rank, key
        if found is not None:
            del self.pending[found]
            self.dropped.append(found)
            self.evictions += 1

    def take_dropped(self) -> list[Key]:
        """The pairs no longer asked since the last call."""
        out, self.dropped = self.dropped, []
        return out

    def passed(self, name: str, url: str) -> None:
        """`name` proved the secret at `url`: announcements of it there pass from now on."""
        self.pending.pop((name, url), None)
        self.proved[name] = url
        self.warned.pop(name, None)

    def failed(self, name: str, url: str, now: float) -> float | None:
        """`name` gave no proof at `url`: seconds until it is asked again (doubling from
        PROOF_RETRY_MIN_S up to PROOF_RETRY_MAX_S), or None when it is no longer asked
        (evicted, expired, gone)."""
        cand = self.pending.get((name, url))
        if cand is None:
            return None
        if now - cand.since > PROOF_EXPIRE_S:
            del self.pending[(name, url)]
            return None
        cand.failures += 1
        return min(PROOF_RETRY_MAX_S, PROOF_RETRY_MIN_S * 2.0 ** (cand.failures - 1))

    def asked(self, name: str, url: str) -> bool:
        """True while (name, url) holds a place."""
        return (name, url) in self.pending

    def warn(self, name: str, now: float) -> bool:
        """True when a warning about `name` may be logged now (once per PROOF_WARN_S)."""
        if now - self.warned.get(name, float("-inf")) < PROOF_WARN_S:
            return False
        if len(self.warned) >= MAX_WARNED:  # a flood of names: forget the stale ones
            self.warned = {n: t for n, t in self.warned.items() if now - t < PROOF_WARN_S}
            if len(self.warned) >= MAX_WARNED:
                return False
        self.warned[name] = now
        return True

    def left(self, name: str) -> list[str]:
        """A goodbye for `name`: its proof and candidates are dropped (its next announcement
        proves again); returns the URLs that were being asked."""
        self.proved.pop(name, None)
        urls = [u for n, u in self.pending if n == name]
        for url in urls:
            del self.pending[(name, url)]
        return urls
