"""Who may connect out to this primary under which name (pure; connect_in.py asks it).

A robot proves its name with its own token: the entry for its name in
`aggregation.connect_robots`, or else the token the primary issues it, HMAC-SHA256(robot key,
name) (hex). The robot key is `aggregation.connect_robot_secret`, else a random key the
primary keeps in its state directory (connect_key.py); it is never the shared
`aggregation.connect_token`, so holding the shared token names no robot. The shared token
itself (and a token older primaries derived from it) is still accepted while
`aggregation.connect_accept_shared` is on, for names without a connect_robots entry: such a
connection names no one, so it never takes the name of a connected robot or of one listed
offline after proving its name. Attempts are rate-limited per source address and connected
robots are capped.

`diag-gateway robot-token NAME...` prints the tokens a primary issues (gateway/cli.py).
"""

from __future__ import annotations

import hashlib
import hmac
import math
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..settings.config import ConfigError
from .connect_key import robot_key
from .settings import AggregationSettings

if TYPE_CHECKING:
    from ..settings.config import Settings

ROBOT, SHARED = "robot", "shared"  # how a connection proved itself
_CONTEXT = b"diag-gateway connect v1\x00"
MAX_TRACKED_SOURCES = 10000


def robot_token(key: str, name: str) -> str:
    """The connect token of robot `name` issued from the robot key `key`."""
    return hmac.new(key.encode(), _CONTEXT + name.encode(), hashlib.sha256).hexdigest()


def robot_entries(entries: Iterable[str]) -> dict[str, str]:
    """`<name>:<token>` entries of aggregation.connect_robots; ConfigError naming the bad one."""
    out: dict[str, str] = {}
    for raw in entries:
        entry = str(raw).strip()
        if not entry or entry.startswith("#"):
            continue
        name, sep, token = entry.partition(":")
        name, token = name.strip(), token.strip()
        if not sep or not name or not token:
            raise ConfigError("setting 'aggregation.connect_robots': entries are "
                              f"<robot name>:<token>, not {name or entry[:20]!r}...")
        if len(token) < 16:
            raise ConfigError(f"setting 'aggregation.connect_robots': the token of {name!r} "
                              "is shorter than 16 characters")
        if name in out:
            raise ConfigError(f"setting 'aggregation.connect_robots': {name!r} is listed twice")
        out[name] = token
    return out


@dataclass(frozen=True)
class Credentials:
    """What the primary accepts: robots' own tokens (listed, or issued from `robot_key`) and,
    while `accept_shared`, the shared secret as a proof of no name."""

    shared: str = field(default="", repr=False)
    robots: Mapping[str, str] = field(default_factory=dict, repr=False)
    accept_shared: bool = True
    robot_key: str = field(default="", repr=False)  # issues robots' tokens; never `shared`

    def __post_init__(self) -> None:
        if self.robot_key and self.robot_key == self.shared:
            raise ConfigError("setting 'aggregation.connect_robot_secret' must differ from "
                              "aggregation.connect_token: whoever holds the shared token "
                              "could issue any robot's token")

    @classmethod
    def from_settings(cls, s: Settings, robot_key: str = "") -> Credentials:
        """From aggregation.connect_token, .connect_robots and .connect_accept_shared, with
        the robot key (connect_key.robot_key)."""
        a = s.typed(AggregationSettings.from_settings)
        return cls(a.connect_token, robot_entries(a.connect_robots), a.connect_accept_shared,
                   robot_key)

    @property
    def enabled(self) -> bool:
        """True when some robot can connect."""
        return bool(self.shared or self.robots or self.robot_key)

    def warnings(self) -> list[str]:
        """Start-up warnings about what a leaked secret would allow."""
        if self.shared and self.accept_shared:
            return ["setting 'aggregation.connect_accept_shared' is on: a client presenting "
                    "aggregation.connect_token itself (or a robot token an older primary "
                    "derived from it) may connect under any free name: not connected, not "
                    "listed offline after proving its name, not in aggregation.connect_robots; "
                    "it never replaces such a robot. Give each robot its own token "
                    "(diag-gateway robot-token NAME; docs/security.md) and set it false"]
        return []

    def proof(self, name: str, given: str) -> str | None:
        """ROBOT when `given` is name's own token, SHARED when it is the accepted shared
        secret (or its older derivation), else None (compared in constant time)."""
        raw = given.encode("utf-8", "replace")  # a header's odd bytes match nothing
        own = self.robots.get(name)
        if own is None and self.robot_key:
            own = robot_token(self.robot_key, name)
        if own is not None and hmac.compare_digest(raw, own.encode()):
            return ROBOT
        if self.shared and self.accept_shared and name not in self.robots:
            # Older primaries derived robot tokens from the shared secret: anyone holding it
            # can compute them, so they prove no more than the shared secret itself.
            legacy = robot_token(self.shared, name)
            if (hmac.compare_digest(raw, self.shared.encode())
                    | hmac.compare_digest(raw, legacy.encode())):
                return SHARED
        return None


class RateLimiter:
    """A token bucket per source address: `per_minute` attempts, refilled evenly."""

    def __init__(self, per_minute: int, max_sources: int = MAX_TRACKED_SOURCES) -> None:
        self.capacity = float(per_minute)
        self.rate_s = per_minute / 60.0
        self.max_sources = max_sources
        self.buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # tokens, at

    def take(self, source: str, now: float) -> float:
        """0.0 when `source` may try now (one attempt taken), else seconds until it may."""
        tokens, at = self.buckets.pop(source, (self.capacity, now))
        tokens = min(self.capacity, tokens + max(0.0, now - at) * self.rate_s)
        wait = 0.0
        if tokens >= 1.0:
            tokens -= 1.0
        else:
            wait = (1.0 - tokens) / self.rate_s
        self.buckets[source] = (tokens, now)
        while len(self.buckets) > self.max_sources:
            self.buckets.popitem(last=False)  # the least recently seen source
        return wait


class Refused(Exception):
    """A connection refused: HTTP status, error code and a message naming the robot."""

    def __init__(self, status: int, code: str, message: str, retry_after_s: float = 0.0
                 ) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.retry_after_s = retry_after_s


def admit(name: str, proof: str, live: Mapping[str, str], other_peer: bool, cap: int,
          held: str | None = None) -> None:
    """Refused unless robot `name` (proved by `proof`) may connect now; `live` maps connected
    robots to their proof, `other_peer` is a configured or discovered peer of that name and
    `held` the proof of the connection that left the name listed offline (None: not held)."""
    if other_peer:
        raise Refused(409, "invalid-request", f"a peer named {name!r} exists already (a "
                      "configured or mDNS peer); robot connections cannot replace it")
    current = live.get(name)
    if current is not None and proof != ROBOT:
        raise Refused(409, "invalid-request", f"robot {name!r} is connected already; only a "
                      "connection with that robot's own token (aggregation.connect_robot_token)"
                      " may replace its tunnel")
    if current is None and held == ROBOT and proof != ROBOT:
        raise Refused(409, "invalid-request", f"robot {name!r} is listed offline (its tunnel "
                      "closed); only a connection with that robot's own token "
                      "(aggregation.connect_robot_token) may take its name")
    if current is None and len(live) >= cap:
        raise Refused(503, "service-unavailable", f"robot {name!r} refused: "
                      f"{len(live)} robots are connected, aggregation.max_connected_robots is "
                      f"{cap}")


class ConnectGate:
    """The primary's connect state: credentials, rate limits and the robots connected."""

    def __init__(self, credentials: Credentials, per_minute: int, cap: int) -> None:
        self.credentials = credentials
        self.limiter = RateLimiter(per_minute)
        self.cap = cap
        self.live: dict[str, str] = {}  # connected (or connecting) robot -> its proof
        self.owner: dict[str, object] = {}  # robot -> the connection that holds its name

    @classmethod
    def from_settings(cls, s: Settings) -> ConnectGate:
        """From the aggregation.connect_* settings (the robot key read or made once)."""
        a = s.typed(AggregationSettings.from_settings)
        return cls(Credentials.from_settings(s, robot_key(s)), a.connect_attempts_per_minute,
                   a.max_connected_robots)

    def claim(self, name: str, proof: str, holder: object) -> None:
        """`holder` holds robot `name` from now on (after `admit`)."""
        self.live[name], self.owner[name] = proof, holder

    def holds(self, name: str, holder: object) -> bool:
        """True while `holder` still holds robot `name`."""
        return self.owner.get(name) is holder

    def release(self, name: str, holder: object) -> bool:
        """Give up robot `name` if `holder` holds it; True if it did."""
        if self.owner.get(name) is not holder:
            return False
        del self.owner[name], self.live[name]
        return True


def retry_after(wait_s: float) -> str:
    """A Retry-After value (whole seconds, at least 1)."""
    return str(max(1, math.ceil(wait_s)))
