"""What an mDNS announcement or goodbye may change (pure): nothing about a peer that answers.

mDNS carries no credentials: anyone on the link can announce any name at any address, or
send a goodbye for it. So an announcement moves a discovered peer to a new address only once
its current address stops answering its health probe, and a goodbye removes it only if it
stops answering soon after (GOODBYE_WINDOW_S); a peer that keeps answering stays where it
is. New names are capped in all and per announced host address.
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
