"""The topics of an entity: what its member apps publish and subscribe, merged by topic.

Read by the data handlers, and by push (cyclic subscriptions, triggers, fault triggers) and
the OpenAPI documents, which check or expand an entity's data items.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..http.state import GatewayState
from ..model.entities import Entity
from ..ros.graph.snapshot import INFRA_TOPICS, is_hidden_topic


@dataclass
class TopicRef:
    """A topic as one entity sees it: type, contributing members and directions."""

    topic: str
    type: str
    member_ids: list[str] = field(default_factory=list)
    publish: bool = False
    subscribe: bool = False

    @property
    def direction(self) -> str:
        """publish, subscribe or both."""
        if self.publish and self.subscribe:
            return "both"
        return "publish" if self.publish else "subscribe"


def entity_topics(state: GatewayState, entity: Entity) -> dict[str, TopicRef]:
    """Topics of the entity's member apps, merged by topic path (cached per generation)."""

    def build() -> dict[str, TopicRef]:
        graph = state.cache.graph
        out: dict[str, TopicRef] = {}
        for app in state.cache.entities.member_apps(entity):
            node = graph.node(app.node_fqn) if app.node_fqn else None
            if node is None:
                continue
            for pairs, pub in ((node.publishers, True), (node.subscribers, False)):
                for topic, typ in pairs:
                    if topic in INFRA_TOPICS or is_hidden_topic(topic):
                        continue
                    ref = out.get(topic)
                    if ref is None:
                        ref = out[topic] = TopicRef(topic, typ)
                    if app.id not in ref.member_ids:
                        ref.member_ids.append(app.id)
                    if pub:
                        ref.publish = True
                    else:
                        ref.subscribe = True
        return dict(sorted(out.items()))

    return state.cache.body(("topics", entity.kind, entity.id), build)
