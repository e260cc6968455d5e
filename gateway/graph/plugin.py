"""The graph provider plugin: `/functions/{id}/x-vendor-graph` from the sample pool's statistics."""

from __future__ import annotations

import logging
import time
from typing import Any

import orjson

from ..errors import not_found
from ..plugins.api import NotFound, Plugin, PluginRoute
from ..plugins.context import PluginContext
from . import fleet, model
from .model import AppView, GraphConfig, TopicMetrics
from .ticker import Ticker

log = logging.getLogger(__name__)

DIAGNOSTICS = "/diagnostics"
DIAGNOSTICS_TYPE = "diagnostic_msgs/msg/DiagnosticArray"
BASELINE_ALPHA = 0.05  # learned expected rate: slow moving average of the measured rate


class GraphPlugin(Plugin):
    """Edges among a function's apps; rates, latency and drops from the pool's subscriptions."""

    def __init__(self) -> None:
        self.cfg = GraphConfig()
        self.ctx: PluginContext | None = None
        self.tick_s = 1.0
        self.forget_after_s = 600.0
        self.seen: dict[str, dict[str, AppView]] = {}  # function -> app -> view
        self.watched: set[str] = set()
        self.baseline: dict[str, float] = {}
        self.diag: dict[str, TopicMetrics] = {}
        self._diag_seq = -1
        self._ticker = Ticker("graph-tick", lambda: self.tick(time.time_ns()),
                              lambda: self.tick_s, log)
        self.ticks = 0

    def configure(self, config: dict[str, Any]) -> None:
        """Thresholds of model.GraphConfig, tick_interval_ms, forget_after_sec."""
        self.cfg = GraphConfig.from_config(config)
        self.tick_s = float(config.get("tick_interval_ms", 1000)) / 1000.0
        self.forget_after_s = float(config.get("forget_after_sec", 600))
        if not self.tick_s > 0:
            raise ValueError("plugins.<name>.tick_interval_ms must be > 0")

    def set_context(self, ctx: PluginContext) -> None:
        """Keep the gateway context; serve the graph to cyclic subscriptions too."""
        self.ctx = ctx
        ctx.register_sampler("x-vendor-graph", self.sample)

    def routes(self) -> list[PluginRoute]:
        """The graph snapshot route."""
        body = {"type": "object", "description": "x-<vendor>-graph: the graph snapshot",
                "minProperties": 1, "maxProperties": 1,
                "additionalProperties": {"type": "object", "required": ["schema_version",
                                                                         "graph_id"]}}
        return [PluginRoute("GET", "/functions/{function_id}/x-vendor-graph", self.graph,
                            "Topic graph of a function's apps with per-edge metrics",
                            response="FunctionGraph", schemas={"FunctionGraph": body})]

    async def start(self) -> None:
        """Begin the membership and baseline tick."""
        self._ticker.start()

    async def shutdown(self) -> None:
        """Stop the tick."""
        await self._ticker.stop()

    # tick -----------------------------------------------------------------------------------

    async def tick(self, now_ns: int) -> None:
        """Remember each function's apps, read /diagnostics, move the learned baselines."""
        assert self.ctx is not None
        self.ticks += 1
        es = self.ctx.entities()
        graph = self.ctx.ros_graph()
        for fid, func in es.functions.items():
            self._remember(fid, self._views(graph, self._scoped(es.member_apps(func)), now_ns),
                           now_ns)
        for fid in [f for f in self.seen if f not in es.functions]:
            self._remember(fid, [], now_ns)
        if DIAGNOSTICS in graph.topics:
            if self.ctx.topic_stats(DIAGNOSTICS) is None:
                await self.ctx.watch_topic(DIAGNOSTICS, DIAGNOSTICS_TYPE)
            self._read_diagnostics()
        for topic in self.watched:
            m = self._pool_metrics(topic, now_ns, None)
            if m is not None and m.frequency_hz:
                old = self.baseline.get(topic)
                self.baseline[topic] = m.frequency_hz if old is None else \
                    old + BASELINE_ALPHA * (m.frequency_hz - old)

    def _scoped(self, members: list[Any]) -> list[Any]:
        """A function's apps that are ROS nodes: external apps and node-less online apps (a
        plugin's, such as the watchdog) are left out; never-started manifest apps stay."""
        assert self.ctx is not None
        return [a for a in members if not a.external and (
            a.node_fqn or a.bound_fqn or not a.is_online or not self.ctx.is_local_app(a.id))]

    def _views(self, graph: Any, members: list[Any], now_ns: int) -> list[AppView]:
        """The scoped apps as seen now: a local app by its node on this robot's graph, an
        app of a fleet peer (its node is on the peer's graph) as the peer reports it."""
        assert self.ctx is not None
        out = []
        for app in members:
            if not self.ctx.is_local_app(app.id):
                out.append(AppView(app.id, app.bound_fqn or "", app.is_online, now_ns))
            elif app.node_fqn or app.bound_fqn:
                out.append(self._view(graph, app, now_ns))
        return out

    @staticmethod
    def _view(graph: Any, app: Any, now_ns: int) -> AppView:
        """A local app: reachable when its node is on the graph; its topics only when it
        inherits the node's resources (a linked app with `inherit_runtime_resources: false`
        has none)."""
        fqn = app.node_fqn or app.bound_fqn
        node = graph.node(fqn)
        pubs = tuple(t for t, _ in node.publishers) if node and app.node_fqn else ()
        subs = tuple(t for t, _ in node.subscribers) if node and app.node_fqn else ()
        return AppView(app.id, fqn, node is not None, now_ns, pubs, subs)

    def _remember(self, fid: str, current: list[AppView], now_ns: int) -> None:
        known = self.seen.setdefault(fid, {})
        present = {v.id for v in current if v.online}
        for v in current:
            if v.online:
                known[v.id] = v
        for aid, v in list(known.items()):
            if aid in present:
                continue
            if v.online:
                known[aid] = AppView(v.id, v.node_fqn, False, v.last_seen_ns, v.publishes,
                                     v.subscribes)
            elif now_ns - v.last_seen_ns > self.forget_after_s * 1e9:
                del known[aid]
        if not known:
            self.seen.pop(fid, None)

    def _read_diagnostics(self) -> None:
        from ..ros.topics.samples import sample_to_json  # noqa: PLC0415 - rclpy only once ROS runs

        assert self.ctx is not None
        sample = self.ctx.newest_sample(DIAGNOSTICS)
        if sample is None or sample.seq == self._diag_seq:
            return
        self._diag_seq = sample.seq
        try:
            body = orjson.loads(sample_to_json(DIAGNOSTICS_TYPE, sample.data))
        except Exception:
            log.debug("unreadable /diagnostics sample", exc_info=True)
            return
        for status in body.get("status", []):
            name = str(status.get("name", ""))
            topic = _topic_of(name)
            if topic:
                self.diag[topic] = model.diagnostics_metrics(status, sample.received_ns, None)

    # route ----------------------------------------------------------------------------------
    async def graph(self, request: Any) -> dict[str, Any]:
        """The graph snapshot of one function (on a fleet primary, joined with the robots')."""
        assert self.ctx is not None
        return await self.snapshot_of(request.match_info["function_id"],
                                      self.ctx.fans_out(request))

    async def sample(self, entity_type: str, entity_id: str) -> dict[str, Any]:
        """The graph snapshot a cyclic subscription on a function delivers each interval."""
        if entity_type != "functions":
            raise NotFound(f"x-vendor-graph is served on functions, not {entity_type}")
        return await self.snapshot_of(entity_id)

    async def snapshot_of(self, fid: str, fan_out: bool = True) -> dict[str, Any]:
        """The graph snapshot of one function (404 when it does not exist); with `fan_out`,
        joined with the snapshots of the fleet peers contributing the function."""
        assert self.ctx is not None
        func = self.ctx.entity("functions", fid)
        if func is None:
            raise not_found(f"Function not found: '{fid}'", entity_id=fid, function_id=fid)
        now = time.time_ns()
        graph = self.ctx.ros_graph()
        members = self._scoped(self.ctx.member_apps(func))
        self._remember(fid, self._views(graph, members, now), now)
        apps = list(self.seen.get(fid, {}).values())
        seen = {a.id for a in apps}
        # members never seen running are scoped too: unreachable, without last_seen
        apps += [AppView(a.id, a.node_fqn or a.bound_fqn or "", False, 0) for a in members
                 if a.id not in seen]
        counts: dict[str, int] = {}
        metrics: dict[str, TopicMetrics] = {}
        for topic in {t for a in apps for t in a.publishes if model.is_graph_topic(t)}:
            info = graph.topics.get(topic)
            if info is not None:
                counts[topic] = info.publisher_count
                if info.type and self.ctx.topic_stats(topic) is None:  # new or evicted
                    try:
                        await self.ctx.watch_topic(topic, info.type)
                        self.watched.add(topic)
                    except Exception as exc:  # the edge stays pending
                        log.debug("cannot watch %s: %s", topic, exc)
            publishers = [a.node_fqn for a in apps if topic in a.publishes]
            source = publishers[0] if len(publishers) == 1 else None
            m = self.diag.get(topic) or self._pool_metrics(topic, now, source)
            if m is not None:
                metrics[topic] = m
        out = model.snapshot(fid, apps, metrics, counts, self.cfg, now, f"x-{self.ctx.vendor}")
        key = f"x-{self.ctx.vendor}-graph"
        peers = await self.ctx.peer_reads("functions", fid, f"/{key}") if fan_out else []
        docs = [(p, b[key]) for p, b in peers if isinstance(b, dict)
                and isinstance(b.get(key), dict)]
        if docs:
            out[key] = fleet.merge(out[key], docs, self.ctx.fleet_app_id)
        return out

    def _pool_metrics(self, topic: str, now_ns: int, source: str | None) -> TopicMetrics | None:
        assert self.ctx is not None
        st = self.ctx.topic_stats(topic)
        if st is None or st.received == 0:
            return None
        expected = self.baseline.get(topic)
        freq = model.rate_hz(st.recent_ns, now_ns, model.window_sec(self.cfg, expected))
        total = st.lost + st.received
        drop = 100.0 * st.lost / total if total and st.lost else 0.0
        return TopicMetrics(st.last_received_ns, freq, st.latency_ms, drop, expected, source)


def _topic_of(status_name: str) -> str | None:
    """The topic a frequency-monitor status is about: its name, or the `/...` word in it."""
    for word in status_name.replace(":", " ").split():
        if word.startswith("/") and len(word) > 1:
            return word
    name = status_name.strip()
    return "/" + name if name and " " not in name else None
