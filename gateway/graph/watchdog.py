"""Silent-fault detectors over the ROS graph: QoS mismatch, orphans, parameter drift,
lifecycle expectation; warm-up arming and grace counting (pure)."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

WARN, ERROR = 1, 2
QOS_MISMATCH = "GRAPH_QOS_MISMATCH"
ORPHAN = "GRAPH_ORPHAN"
PARAM_DRIFT = "GRAPH_PARAM_DRIFT"
NODE_INACTIVE = "GRAPH_NODE_INACTIVE"
NODE_UNREADABLE = "GRAPH_NODE_UNREADABLE"
NODE_NOT_MANAGED = "GRAPH_NODE_NOT_MANAGED"
CODES = (QOS_MISMATCH, ORPHAN, PARAM_DRIFT, NODE_INACTIVE, NODE_UNREADABLE, NODE_NOT_MANAGED)
QOS_SKIPPED_TOPICS = frozenset({"/rosout", "/parameter_events"})
INFINITE_NS = 1 << 62


@dataclass(frozen=True)
class Endpoint:
    """One publisher or subscriber of a topic with the QoS it offers or requests."""

    node: str  # fully qualified node name
    reliability: str = "reliable"  # reliable | best_effort
    durability: str = "volatile"  # volatile | transient_local
    liveliness: str = "automatic"  # automatic | manual_by_topic
    deadline_ns: int = 0  # 0: infinite
    lease_ns: int = 0  # 0: infinite


@dataclass(frozen=True)
class Finding:
    """One problem: the code, a key naming it, severity, description and the node it is about."""

    code: str
    key: str
    severity: int
    message: str
    node: str | None = None


def _finite(ns: int) -> int | None:
    return ns if 0 < ns < INFINITE_NS else None


def qos_incompatibility(pub: Endpoint, sub: Endpoint) -> str | None:
    """Why a subscriber's request cannot be met by a publisher's offer, or None."""
    if pub.reliability == "best_effort" and sub.reliability == "reliable":
        return "publisher offers BEST_EFFORT, subscriber requests RELIABLE"
    if pub.durability == "volatile" and sub.durability == "transient_local":
        return "publisher offers VOLATILE, subscriber requests TRANSIENT_LOCAL"
    if pub.liveliness == "automatic" and sub.liveliness == "manual_by_topic":
        return "publisher offers AUTOMATIC liveliness, subscriber requests MANUAL_BY_TOPIC"
    want, offer = _finite(sub.deadline_ns), _finite(pub.deadline_ns)
    if want is not None and (offer is None or offer > want):
        return "publisher's deadline is longer than the subscriber requests"
    want, offer = _finite(sub.lease_ns), _finite(pub.lease_ns)
    if want is not None and (offer is None or offer > want):
        return "publisher's liveliness lease is longer than the subscriber requests"
    return None


def qos_findings(topics: Mapping[str, tuple[list[Endpoint], list[Endpoint]]],
                 allowlist: Iterable[str] = ()) -> list[Finding]:
    """A subscriber incompatible with every publisher: ERROR; with some: WARN."""
    allowed = set(allowlist)
    out = []
    for topic in sorted(topics):
        if topic in QOS_SKIPPED_TOPICS:
            continue
        pubs, subs = topics[topic]
        if not pubs:
            continue
        for sub in subs:
            if sub.node in allowed:
                continue
            reasons = [(p, qos_incompatibility(p, sub)) for p in pubs]
            bad = [(p, r) for p, r in reasons if r]
            if not bad:
                continue
            severity = ERROR if len(bad) == len(pubs) else WARN
            p, why = bad[0]
            out.append(Finding(QOS_MISMATCH, f"{topic}|{sub.node}", severity,
                               f"{sub.node} on {topic}: {why} ({p.node}); "
                               f"{len(bad)} of {len(pubs)} publishers incompatible", sub.node))
    return out


def levenshtein(a: str, b: str, limit: int) -> int:
    """Edit distance, stopping early past limit (returns limit + 1 then)."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        if min(cur) > limit:
            return limit + 1
        prev = cur
    return prev[-1]


_DIGITS = re.compile(r"\d+")


def orphan_findings(counts: Mapping[str, tuple[int, int]], max_edit_distance: int = 1,
                    allowlist: Iterable[str] = ()) -> list[Finding]:
    """Publisher-only and subscriber-only topics in one namespace whose leaf names are a
    near miss (a typo joins nothing); pairs equal after collapsing digits are ignored."""
    allowed = set(allowlist)
    pub_only = [t for t, (p, s) in counts.items() if p > 0 and s == 0 and t not in allowed]
    sub_only = [t for t, (p, s) in counts.items() if s > 0 and p == 0 and t not in allowed]
    out = []
    for sub in sorted(sub_only):
        ns, _, leaf = sub.rpartition("/")
        for pub in sorted(pub_only):
            pns, _, pleaf = pub.rpartition("/")
            if pns != ns or _DIGITS.sub("#", leaf) == _DIGITS.sub("#", pleaf):
                continue
            if levenshtein(leaf, pleaf, max_edit_distance) <= max_edit_distance:
                out.append(Finding(ORPHAN, f"{sub}|{pub}", ERROR,
                                   f"{sub} has subscribers but no publisher, {pub} has a "
                                   "publisher but no subscriber: a misspelt topic name?"))
    return out


def drift_findings(baselines: Mapping[str, Mapping[str, Any]],
                   current: Mapping[str, Mapping[str, Any]],
                   expect: Mapping[str, Any] | None = None,
                   ignore: Iterable[str] = ()) -> list[Finding]:
    """Parameters whose value left the armed baseline (or an `expect` pin)."""
    patterns = list(ignore)
    pins = dict(expect or {})
    out = []
    for node in sorted(current):
        values = current[node]
        base = baselines.get(node, {})
        for name in sorted(values):
            if any(fnmatch.fnmatchcase(name, p) for p in patterns):
                continue
            want = pins[name] if name in pins else base.get(name, values[name])
            if values[name] != want:
                out.append(Finding(PARAM_DRIFT, f"{node}|{name}", WARN,
                                   f"{node} parameter {name} is {values[name]!r}, expected "
                                   f"{want!r}", node))
    return out


def lifecycle_findings(required: Mapping[str, str | None], unmeasured_ticks: Mapping[str, int],
                       managed: Mapping[str, bool], unreadable_after: int = 60
                       ) -> list[Finding]:
    """Nodes required active: INACTIVE (state read, not active), UNREADABLE (managed, never
    read), NOT_MANAGED (no lifecycle services); one code per node."""
    out = []
    for node in sorted(required):
        label = required[node]
        if label is not None:
            if label != "active":
                out.append(Finding(NODE_INACTIVE, node, ERROR,
                                   f"{node} is '{label}', expected 'active'", node))
            continue
        if unmeasured_ticks.get(node, 0) < unreadable_after:
            continue
        if managed.get(node, False):
            out.append(Finding(NODE_UNREADABLE, node, WARN,
                               f"{node} is a managed node whose state cannot be read", node))
        else:
            out.append(Finding(NODE_NOT_MANAGED, node, WARN,
                               f"{node} is required active but has no lifecycle services",
                               node))
    return out


@dataclass
class Arming:
    """Entities arm after `warmup` consecutive present ticks; absence resets the count."""

    warmup: int = 5
    tick: int = 0
    first_seen: dict[str, int] = field(default_factory=dict)
    streak: dict[str, int] = field(default_factory=dict)

    def update(self, present: Iterable[str]) -> None:
        """One tick with these entities present."""
        self.tick += 1
        now = set(present)
        for eid in now:
            self.first_seen.setdefault(eid, self.tick)
            self.streak[eid] = self.streak.get(eid, 0) + 1
        for eid in [e for e in self.streak if e not in now]:
            del self.streak[eid]
            self.first_seen.pop(eid, None)

    def armed(self, eid: str) -> bool:
        """Whether the entity finished its warm-up."""
        return self.streak.get(eid, 0) >= self.warmup


@dataclass
class Grace:
    """A finding raises only after holding for `ticks` consecutive sweeps."""

    ticks: int
    held: dict[str, int] = field(default_factory=dict)

    def filter(self, findings: list[Finding]) -> list[Finding]:
        """The findings that held long enough; forgets keys that went away."""
        keys = {f.key for f in findings}
        self.held = {k: self.held.get(k, 0) + 1 for k in keys}
        return [f for f in findings if self.held[f.key] >= self.ticks]


def aggregate(code: str, findings: list[Finding]) -> tuple[str, int, str]:
    """(event, severity, description) of one level-triggered fault code after a sweep."""
    mine = [f for f in findings if f.code == code]
    if not mine:
        return "PASSED", WARN, f"{code}: nothing found"
    severity = max(f.severity for f in mine)
    text = "; ".join(f.message for f in mine[:8])
    if len(mine) > 8:
        text += f"; and {len(mine) - 8} more"
    return "FAILED", severity, text
