"""Runtime-only discovery: graph snapshot -> entities (pure)."""

from __future__ import annotations

import platform
import socket
from collections import Counter
from dataclasses import dataclass
from typing import Any

from ..model.entities import Entity, EntitySet
from ..model.ids import sanitize


@dataclass(frozen=True)
class NodeRef:
    """The part of a graph node discovery needs."""

    name: str
    namespace: str

    @property
    def fqn(self) -> str:
        """Fully qualified node name."""
        return ("" if self.namespace == "/" else self.namespace.rstrip("/")) + "/" + self.name


@dataclass(frozen=True)
class HostInfo:
    """System information for the host component."""

    hostname: str
    system: str = ""
    machine: str = ""
    release: str = ""

    @classmethod
    def local(cls) -> HostInfo:
        """This machine."""
        return cls(socket.gethostname(), platform.system(), platform.machine(),
                   platform.release())


def app_ids(nodes: list[NodeRef]) -> dict[str, str]:
    """fqn -> app id: the node name, prefixed by its namespace when two nodes share a name."""
    counts = Counter(n.name for n in nodes)
    out: dict[str, str] = {}
    for n in nodes:
        if counts[n.name] == 1:
            out[n.fqn] = sanitize(n.name)
        else:
            out[n.fqn] = sanitize(n.fqn)
    # two different names that sanitize alike still must not collide
    used: Counter[str] = Counter()
    for fqn in sorted(out):
        used[out[fqn]] += 1
        if used[out[fqn]] > 1:
            out[fqn] = f"{out[fqn]}_{used[out[fqn]]}"
    return out


def function_id(namespace: str) -> str:
    """The function of a namespace: its first segment, or `root` for `/`."""
    first = namespace.strip("/").split("/")[0]
    return sanitize(first) if first else "root"


def build(nodes: list[NodeRef], host: HostInfo, generation: int) -> EntitySet:
    """Entities of runtime_only mode: apps, one host component, functions; no areas."""
    out = EntitySet(generation=generation)
    host_id = sanitize(host.hostname)
    # camelCase nameplate fields, with the snake_case provenance keys the spec names
    fields = (
        ("model", "model", f"{host.system} {host.machine}".strip()),
        ("softwareVersion", "software_version", host.release),
        ("networkEndpoint", "network_endpoint", host.hostname),
    )
    identity: dict[str, Any] = {camel: value for camel, _, value in fields if value}
    if identity:
        identity["_provenance"] = {snake: "system" for _, snake, value in fields if value}
    component = Entity("components", host_id, host.hostname, source="runtime",
                       description="Host running the ROS 2 nodes", identity=identity)
    out.components[host_id] = component
    ids = app_ids(nodes)
    for n in sorted(nodes, key=lambda n: ids[n.fqn]):
        aid = ids[n.fqn]
        app = Entity("apps", aid, n.name, source="heuristic", node_fqn=n.fqn,
                     namespace=n.namespace, component=host_id)
        out.apps[aid] = app
        component.hosts.append(aid)
        fid = function_id(n.namespace)
        func = out.functions.get(fid)
        if func is None:
            func = out.functions[fid] = Entity(
                "functions", fid, fid, source="runtime",
                description=f"Nodes in namespace /{fid}" if fid != "root" else
                "Nodes in the root namespace")
        func.hosts.append(aid)
    return out
