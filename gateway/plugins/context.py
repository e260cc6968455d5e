"""What the gateway offers a plugin: entity lookup, faults, ROS queries, topic stats, events."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ..bulk_data.keys import BULK_DATA
from ..events import Event
from ..faults.keys import FAULT_SERVICE
from ..faults.model import FAILED, PASSED, Report
from ..federation.reads import peer_reads
from ..http.resource_helpers import federation
from ..model.entities import Entity, EntitySet
from ..push.keys import PUSH_DELIVERY
from .calls import Caller

if TYPE_CHECKING:
    from ..http.state import GatewayState


def plugin_source(plugin: str, kind: str, entity_id: str) -> str:
    """Fault source of a plugin entity: `/x-plugin/<plugin>/<kind>/<id>`."""
    return f"/x-plugin/{plugin}/{kind}/{entity_id}"


def parse_plugin_source(source: str) -> tuple[str, str, str] | None:
    """(plugin, kind, entity id) of a plugin entity's fault source, else None."""
    parts = source.split("/")
    if len(parts) == 5 and parts[0] == "" and parts[1] == "x-plugin" and all(parts[2:]):
        return parts[2], parts[3], parts[4]
    return None


class PluginContext:
    """One per plugin; valid from set_context() until shutdown()."""

    def __init__(self, state: GatewayState, app: web.Application, name: str,
                 caller: Caller) -> None:
        self._state, self._app, self._caller = state, app, caller
        self.name = name

    @property
    def settings(self) -> Any:
        """The gateway settings (read-only)."""
        return self._state.settings

    @property
    def storage(self) -> Any:
        """The gateway's storage health (process/storage.py): a plugin's stores write inside
        `storage.writing(store, directory)`, so a full disk answers 507 and degrades /health."""
        return self._state.storage

    @property
    def vendor(self) -> str:
        """The vendor word (x-<vendor> keys)."""
        return str(self._state.vendor)

    # entities -------------------------------------------------------------------------------
    def entities(self) -> EntitySet:
        """The current entity set (do not modify)."""
        return self._state.cache.entities

    def entity(self, kind: str, entity_id: str) -> Entity | None:
        """One entity or None."""
        return self.entities().get(kind, entity_id)

    def member_apps(self, entity: Entity) -> list[Entity]:
        """The apps backing an entity."""
        return self.entities().member_apps(entity)

    def fans_out(self, request: Any) -> bool:
        """Whether a plugin route's answer may include fleet peers' (aggregation on, and the
        caller did not ask for this gateway's answer alone)."""
        fed = federation(self._state)
        return fed is not None and not fed.no_fan_out(request)

    async def peer_reads(self, kind: str, entity_id: str, suffix: str) -> list[tuple[str, Any]]:
        """(peer, JSON) of `GET /{kind}/{id}{suffix}` on each fleet peer contributing the
        entity (empty without aggregation)."""
        fed = federation(self._state)
        if fed is None:
            return []

        return await peer_reads(fed, kind, entity_id, suffix)

    def fleet_app_id(self, peer: str, app_id: str) -> str:
        """The fleet id of an app as a peer names it."""
        fed = federation(self._state)
        return app_id if fed is None else str(fed.rename(peer, app_id))

    def is_local_app(self, app_id: str) -> bool:
        """Whether an app runs on this gateway's robot (not on a fleet peer's)."""
        return app_id in self._state.cache.local.apps

    def ros_graph(self) -> Any:
        """The newest ROS graph snapshot (ros.graph.GraphSnapshot)."""
        return self._state.cache.graph

    @property
    def graph_generation(self) -> int:
        """Bumps whenever the entity set changes."""
        return int(self._state.cache.generation)

    # faults ---------------------------------------------------------------------------------
    def report_faults(self, reports: Iterable[Any]) -> bool:
        """Hand faults.model.Report values to the fault manager; False when it is not running."""
        self._app[FAULT_SERVICE].submit(list(reports))
        return True

    def fault_source(self, entity_id: str, kind: str = "apps") -> str:
        """The reporting source naming one of this plugin's entities in the fault manager."""
        return plugin_source(self.name, kind, entity_id)

    def raise_fault(self, entity_id: str, code: str, severity: int = 2, description: str = "",
                    kind: str = "apps") -> bool:
        """Report a FAILED fault of an entity (shows in /faults, the stream, its faults)."""
        return self.report_faults([Report(code, FAILED, severity, description,
                                          self.fault_source(entity_id, kind))])

    def pass_fault(self, entity_id: str, code: str, kind: str = "apps") -> bool:
        """Report PASSED for a fault of an entity (the manager heals it per its settings)."""
        return self.report_faults([Report(code, PASSED, source=self.fault_source(entity_id,
                                                                                 kind))])

    def faults(self) -> list[Any]:
        """Every fault record the fault manager holds."""
        return list(self._app[FAULT_SERVICE].faults.values())

    # ROS ------------------------------------------------------------------------------------
    async def ros_query(self, fn: Callable[..., Any], *args: Any, timeout: float = 5.0) -> Any:
        """fn(node, *args) on the gateway's ROS node in a worker thread, with a timeout."""
        bridge = self._state.bridge
        return await bridge.run(fn, bridge.node, *args, timeout=timeout,
                                what=f"plugin {self.name} ROS query")

    async def watch_topic(self, topic: str, type_name: str) -> None:
        """Keep the sample pool subscribed to topic (its LRU may still drop it)."""
        await self._state.pool.track(topic, type_name)

    async def node_parameters(self, node_fqn: str) -> dict[str, Any]:
        """Every parameter value of a node (ros.parameters errors when it does not answer)."""
        store = self._state.parameters
        return {p.name: p.value for p in await store.params(node_fqn)}

    def parameters_set_here(self, node_fqn: str) -> dict[str, Any]:
        """The values this gateway itself last set on a node's parameters (by name)."""
        written = self._state.parameters.written.get(node_fqn, {})
        return {name: value for name, (value, _) in written.items()}

    async def call_service(self, name: str, type_name: str, request: Any,
                           timeout: float = 2.0) -> Any:
        """Call a ROS service (e.g. lifecycle_msgs/srv/GetState) with a timeout."""
        return await self._state.service_caller.call(name, type_name, request, timeout)

    def topic_stats(self, topic: str) -> Any:
        """Receive statistics of a pooled topic (ros.topics.TopicStats) or None."""
        return self._state.pool.topic_stats(topic)

    def newest_sample(self, topic: str) -> Any:
        """The newest pooled sample of topic (ros.topics.Sample) or None."""
        return self._state.pool.newest(topic)

    def bulk_data_file(self, category: str, upload_id: str) -> Any:
        """Path of an uploaded bulk-data file, or None."""
        store = self._app[BULK_DATA].uploads
        up = store.get(category, upload_id)
        return store.path(up) if up is not None else None

    # events and health ----------------------------------------------------------------------
    def publish(self, event: Event) -> None:
        """Publish on the gateway's event bus."""
        self._state.events.publish(event)

    def register_sampler(self, collection: str, sampler: Callable[[str, str], Any]) -> None:
        """Serve an `x-` collection to cyclic subscriptions: sampler(entity_type, entity_id).

        The sampler's JSON value is each frame's `data`; it runs through this plugin's call
        wrapper (timeout, plugin error), and the subscription engine reads it at most once a
        second per entity.
        """
        if not collection.startswith("x-"):
            raise ValueError(f"sampled collection {collection!r} must carry the 'x-' prefix")
        name = collection.replace("x-vendor", f"x-{self.vendor}")
        caller = self._caller

        async def provide(state: Any, entity: Entity) -> Any:
            return await caller(sampler, entity.kind, entity.id, entity_id=entity.id,
                                what=f"sampler {name}")

        self._app[PUSH_DELIVERY].collections[name] = provide

    def add_health(self, key: str, provider: Callable[[], Any]) -> None:
        """Add a block to /health (`x-vendor` in key becomes the vendor word)."""
        self._state.health[key] = provider
