"""A snapshot of the ROS graph, polled and compared by value."""

from __future__ import annotations

from dataclasses import dataclass, field

# Topics and services every node has; not diagnostic data or operations of the node.
INFRA_TOPICS = frozenset({"/rosout", "/parameter_events"})
PARAM_SERVICE_SUFFIXES = (
    "/describe_parameters", "/get_parameters", "/get_parameter_types", "/list_parameters",
    "/set_parameters", "/set_parameters_atomically", "/get_type_description",
    "/get_logger_levels", "/set_logger_levels",
)

Pairs = tuple[tuple[str, str], ...]


def _pairs(names_and_types: list[tuple[str, list[str]]]) -> Pairs:
    return tuple(sorted((name, types[0] if types else "") for name, types in names_and_types))


def ros_type(dds_type: str) -> str:
    """`pkg/kind/Name` of a DDS type name (`pkg::kind::dds_::Name_`), service parts folded
    into their service (`Trigger_Request_` -> `Trigger`); ROS names pass through."""
    if "::" not in dds_type:
        return dds_type
    parts = [p for p in dds_type.split("::") if p != "dds_"]
    if len(parts) != 3:
        return dds_type
    pkg, kind, name = parts
    name = name[:-1] if name.endswith("_") else name
    if kind in ("srv", "action"):
        for suffix in ("_Request", "_Response"):
            if name.endswith(suffix):
                name = name[: -len(suffix)]
    return f"{pkg}/{kind}/{name}"


def is_hidden_topic(name: str) -> bool:
    """Hidden (leading underscore segment) or action-internal names."""
    return any(part.startswith("_") for part in name.split("/") if part)


@dataclass(frozen=True)
class NodeInfo:
    """What one node offers on the graph."""

    name: str
    namespace: str
    publishers: Pairs = ()
    subscribers: Pairs = ()
    services: Pairs = ()
    actions: Pairs = ()

    @property
    def fqn(self) -> str:
        """Fully qualified node name."""
        return (self.namespace.rstrip("/") + "/" + self.name) if self.namespace != "/" else (
            "/" + self.name)

    def user_services(self) -> Pairs:
        """Services that are operations (no parameter, type-description or action internals)."""
        return tuple(
            (n, t) for n, t in self.services
            if not n.endswith(PARAM_SERVICE_SUFFIXES) and not is_hidden_topic(n)
        )


@dataclass(frozen=True)
class TopicInfo:
    """One topic: type and counts."""

    name: str
    type: str
    publisher_count: int
    subscriber_count: int


@dataclass(frozen=True)
class GraphSnapshot:
    """Nodes and topics at one instant (hidden nodes left out)."""

    nodes: tuple[NodeInfo, ...] = ()
    topics: dict[str, TopicInfo] = field(default_factory=dict, compare=True, hash=False)

    def node(self, fqn: str) -> NodeInfo | None:
        """The node with this fully qualified name."""
        for n in self.nodes:
            if n.fqn == fqn:
                return n
        return None
