"""What an mDNS announcement or goodbye may change (pure): nothing about a peer that answers.

mDNS carries no credentials: anyone on the link can announce any name at any address, or
send a goodbye for it. So an announcement moves a discovered peer to a new address only once
its current address stops answering its health probe, and a goodbye removes it only if it
stops answering soon after (GOODBYE_WINDOW_S); a peer that keeps answering stays where it
is. New names are capped in all and per announced host address.

With `aggregation.fleet_secret` (ProofGate), an announcement reaches those rules only once
the peer proved the secret at the announced address (fleet_proof.py): a name or a new
address nobody proved is not used at all.
"""

from __future__ import annotations

from collections.abc import Mapping
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
PASS, CHECK, BUSY, REFUSE = "pass", "check", "busy", "refuse"
PROOF_RETRY_MIN_S = 1.0  # a peer announces before it listens: asked again soon, then rarer
PROOF_RETRY_MAX_S = 30.0
PROOF_WARN_S = 30.0  # one warning per name this often
MAX_WARNED = 1024  # names remembered for that; past it (a flood within 30 s), none logged


class ProofGate:
    """Which announced (name, address) pairs proved the fleet secret, which are being asked,
    and when to ask again; unproved candidates are capped in all and per host address."""

    def __init__(self, max_pending: int, max_pending_per_address: int) -> None:
        self.max_pending = max_pending
        self.max_per_address = max_pending_per_address
        self.proved: dict[str, str] = {}  # name -> the URL it proved at
        self.pending: dict[tuple[str, str], int] = {}  # (name, URL) -> failed challenges
        self.warned: dict[str, float] = {}  # name -> when its last warning was logged

    def announced(self, name: str, url: str) -> str:
        """PASS (proved at `url`), BUSY (being asked there), CHECK (ask now) or REFUSE
        (too many unproved candidates: at that host address or in all)."""
        if self.proved.get(name) == url:
            return PASS
        if (name, url) in self.pending:
            return BUSY
        host = host_of(url)
        if len(self.pending) >= self.max_pending or sum(
                1 for _, u in self.pending if host_of(u) == host) >= self.max_per_address:
            return REFUSE
        self.pending[(name, url)] = 0
        return CHECK

    def passed(self, name: str, url: str) -> None:
        """`name` proved the secret at `url`: announcements of it there pass from now on."""
        self.pending.pop((name, url), None)
        self.proved[name] = url
        self.warned.pop(name, None)

    def failed(self, name: str, url: str) -> float:
        """`name` gave no proof at `url`: seconds until it is asked again (doubling from
        PROOF_RETRY_MIN_S up to PROOF_RETRY_MAX_S)."""
        tries = self.pending.get((name, url), 0) + 1
        self.pending[(name, url)] = tries
        return min(PROOF_RETRY_MAX_S, PROOF_RETRY_MIN_S * 2.0 ** (tries - 1))

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
