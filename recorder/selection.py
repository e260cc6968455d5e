"""Topic choice (pure): what the ring buffer subscribes to, and what a recording keeps.

Modes (`snapshots.rosbag.topic_selection`):
- `node` (default, facts.md): the buffer holds every published topic, and a recording keeps
  the topics the faulting nodes publish plus `include_topics` (default `/tf`).
- `all`: a recording keeps every buffered topic.
- `explicit`: the buffer holds, and a recording keeps, exactly `topics` (+ `include_topics`).
`exclude_topics`, infrastructure topics and hidden names are never recorded. With
`lazy_start` the buffer subscribes only once a fault is pending or confirmed, and in `node`
mode only to the topics of the nodes with such a fault.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

# node fqn -> ((topic, type), ...) that it publishes
NodeTopics = Mapping[str, Iterable[tuple[str, str]]]

ALWAYS_EXCLUDED = frozenset({"/rosout", "/parameter_events"})
MODES = ("node", "all", "explicit")


def hidden(topic: str) -> bool:
    """Hidden (a segment starting with '_') or action-internal names."""
    return any(part.startswith("_") for part in topic.split("/") if part)


@dataclass(frozen=True)
class TopicChoice:
    """The topic settings."""

    mode: str = "node"
    topics: tuple[str, ...] = ()
    include: tuple[str, ...] = ("/tf",)
    exclude: frozenset[str] = frozenset()

    def allowed(self, topic: str) -> bool:
        """Recordable at all."""
        return not (topic in ALWAYS_EXCLUDED or topic in self.exclude or hidden(topic))

    def buffered(self, nodes: NodeTopics, armed: Collection[str] | None = None
                 ) -> dict[str, str]:
        """topic -> type to subscribe; armed (lazy start) lists the nodes with a fault."""
        if armed is not None and not armed:
            return {}
        out: dict[str, str] = {}
        wanted = set(self.topics) | set(self.include)
        for fqn, pairs in nodes.items():
            for topic, typ in pairs:
                if not typ or not self.allowed(topic) or topic in out:
                    continue
                if self.mode == "explicit" and topic not in wanted:
                    continue
                if (self.mode == "node" and armed is not None and fqn not in armed
                        and topic not in self.include):
                    continue
                out[topic] = typ
        return dict(sorted(out.items()))

    def recorded(self, sources: Iterable[str], nodes: NodeTopics) -> set[str] | None:
        """Topics a recording keeps for faults reported by `sources` (None: every one)."""
        if self.mode == "all":
            return None
        if self.mode == "explicit":
            return {t for t in (*self.topics, *self.include) if self.allowed(t)}
        out = {t for t in self.include if self.allowed(t)}
        for fqn in sources:
            for topic, _typ in nodes.get(fqn, ()):
                if self.allowed(topic):
                    out.add(topic)
        return out
