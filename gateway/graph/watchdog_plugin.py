"""The graph watchdog plugin: detectors each tick, GRAPH_* faults, `/x-vendor-watchdog`."""

from __future__ import annotations

import logging
import time
from typing import Any

import orjson

from ..errors import ApiError
from ..faults.model import Report
from ..plugins.api import INTROSPECTION, Plugin, PluginRoute
from ..plugins.context import PluginContext
from . import watchdog as wd
from .ticker import Ticker
from .watchdog import Arming, Endpoint, Finding, Grace

log = logging.getLogger(__name__)

SCHEMA_VERSION = "1.0.0"
APP_ID = "graph_watchdog"  # the app the watchdog shows as (its faults are this app's)
DETECTORS = {  # id -> (codes, default grace)
    "qos_mismatch": ((wd.QOS_MISMATCH,), 3),
    "orphan": ((wd.ORPHAN,), 10),
    "param_drift": ((wd.PARAM_DRIFT,), 1),
    "lifecycle_expectation": ((wd.NODE_INACTIVE, wd.NODE_UNREADABLE, wd.NODE_NOT_MANAGED), 5),
}
MODES = ("raise", "advisory", "off")
PARAMETER_EVENTS = "/parameter_events"
PARAMETER_EVENT_TYPE = "rcl_interfaces/msg/ParameterEvent"


def _event_node(sample: Any) -> str | None:
    """The node named by a pooled /parameter_events sample."""
    if sample is None:
        return None

    from ..ros.topics.samples import sample_to_json  # noqa: PLC0415 - rclpy only once ROS runs

    try:
        return str(orjson.loads(sample_to_json(PARAMETER_EVENT_TYPE, sample.data))["node"])
    except Exception:  # unknown: the caller reads every node
        return None


def _word(value: Any) -> str:
    return str(getattr(value, "name", value)).lower()


def _ns(duration: Any) -> int:
    ns = int(getattr(duration, "nanoseconds", 0) or 0)
    return 0 if ns >= wd.INFINITE_NS else ns


def collect_endpoints(node: Any) -> dict[str, tuple[list[Endpoint], list[Endpoint]]]:
    """Publishers and subscribers with their QoS, per topic (blocking; a ROS worker thread)."""
    out: dict[str, tuple[list[Endpoint], list[Endpoint]]] = {}
    for topic, _types in node.get_topic_names_and_types():
        if topic in wd.QOS_SKIPPED_TOPICS:
            continue
        sides = []
        for infos in (node.get_publishers_info_by_topic(topic),
                      node.get_subscriptions_info_by_topic(topic)):
            eps = []
            for i in infos:
                if i.node_name.startswith("_"):
                    continue  # the gateway's own and other hidden nodes
                q = i.qos_profile
                ns = i.node_namespace.rstrip("/")
                eps.append(Endpoint(f"{ns}/{i.node_name}", _word(q.reliability),
                                    _word(q.durability), _word(q.liveliness), _ns(q.deadline),
                                    _ns(q.liveliness_lease_duration)))
            sides.append(eps)
        out[topic] = (sides[0], sides[1])
    return out


class WatchdogPlugin(Plugin):
    """Runs the detectors every tick and raises their findings as GRAPH_* faults."""

    def __init__(self) -> None:
        self.ctx: PluginContext | None = None
        self.config: dict[str, Any] = {}
        self.tick_s = 1.0
        self.arming = Arming()
        self.modes: dict[str, str] = {}
        self.graces: dict[str, Grace] = {}
        self.findings: dict[str, list[Finding]] = {d: [] for d in DETECTORS}
        self.raised: set[str] = set()
        self.baselines: dict[str, dict[str, Any]] = {}
        self.drift_values: dict[str, dict[str, Any]] = {}
        self._dirty: set[str] = set()
        self._events_seen = 0
        self._last_sweep = time.monotonic()
        self._qos_generation = -1
        self._endpoints: dict[str, tuple[list[Endpoint], list[Endpoint]]] = {}
        self.lifecycle: dict[str, str | None] = {}
        self.unmeasured: dict[str, int] = {}
        self.managed: dict[str, bool] = {}
        self.running = False
        self._ticker = Ticker("watchdog-tick", lambda: self.tick(), lambda: self.tick_s, log)
        self.ticks = 0

    # plugin ---------------------------------------------------------------------------------
    def configure(self, config: dict[str, Any]) -> None:
        """warmup_cycles, tick_interval_ms and `<detector>.*` keys (mode, grace, ...)."""
        self.config = dict(config)
        self.arming = Arming(int(config.get("warmup_cycles", 5)))
        self.tick_s = float(config.get("tick_interval_ms", 1000)) / 1000.0
        if self.arming.warmup < 1 or not self.tick_s > 0:
            raise ValueError("warmup_cycles must be >= 1 and tick_interval_ms > 0")
        for det, (_codes, grace) in DETECTORS.items():
            raw = self._opt(det, "mode", "raise")
            # YAML reads a bare `off` as false (and `on` as true)
            mode = {False: "off", True: "raise"}.get(raw, str(raw)) if isinstance(
                raw, bool) else str(raw)
            if mode not in MODES:
                raise ValueError(f"plugins.{self.name}.{det}.mode: {mode!r} is not one of "
                                 f"{', '.join(MODES)}")
            self.modes[det] = mode
            self.graces[det] = Grace(max(int(self._opt(det, "grace", grace)), 1))

    def _opt(self, det: str, key: str, default: Any) -> Any:
        return self.config.get(f"{det}.{key}", default)

    def _list(self, det: str, key: str) -> list[str]:
        value = self._opt(det, key, [])
        if isinstance(value, str):
            value = [v for v in value.split(",") if v.strip()]
        return [str(v).strip() for v in value or []]

    def set_context(self, ctx: PluginContext) -> None:
        """Keep the gateway context."""
        self.ctx = ctx

    def providers(self) -> dict[str, Any]:
        """Introspection: the watchdog itself is an app, so its faults can be read and cleared."""
        return {INTROSPECTION: self}

    def introspect(self) -> dict[str, list[dict[str, Any]]]:
        """One external app, online, on the first component (as the reference lists it)."""
        return {"apps": [{"id": APP_ID, "name": "Graph watchdog", "is_online": True,
                          "description": "Graph watchdog: GRAPH_* faults of the ROS graph"}]}

    def routes(self) -> list[PluginRoute]:
        """The watchdog status route."""
        body = {"type": "object", "description": "x-<vendor>-watchdog: the status",
                "minProperties": 1, "maxProperties": 1,
                "additionalProperties": {"type": "object", "required": [
                    "schema_version", "warmup_cycles", "global_state", "tick", "entities",
                    "detectors"]}}
        return [PluginRoute("GET", "/x-vendor-watchdog", self.status,
                            "Graph watchdog reliability status",
                            response="WatchdogStatus", schemas={"WatchdogStatus": body})]

    async def start(self) -> None:
        """Begin ticking."""
        self.running = True
        self._ticker.start()

    async def shutdown(self) -> None:
        """Stop ticking; the status answers 503 from now on."""
        self.running = False
        await self._ticker.stop()

    # tick -----------------------------------------------------------------------------------
    async def tick(self) -> None:
        """One sweep of every detector that is not off."""
        assert self.ctx is not None
        ctx = self.ctx
        apps = {a.node_fqn: a for a in ctx.entities().apps.values() if a.node_fqn}
        self.arming.update(a.id for a in apps.values())
        armed = {fqn for fqn, a in apps.items() if self.arming.armed(a.id)}
        for fqn in [n for n in self.baselines if n not in armed]:  # a restart re-captures
            self.baselines.pop(fqn, None)
            self.drift_values.pop(fqn, None)
        if self.modes["qos_mismatch"] != "off":
            # QoS is fixed per endpoint: query again when the graph changed, and every 10 ticks
            if ctx.graph_generation != self._qos_generation or self.ticks % 10 == 0:
                self._endpoints = await ctx.ros_query(collect_endpoints, timeout=5.0)
                self._qos_generation = ctx.graph_generation
            found = wd.qos_findings(self._endpoints, self._list("qos_mismatch", "allowlist"))
            self._settle("qos_mismatch", [f for f in found if f.node in armed])
        if self.modes["orphan"] != "off":
            counts = {t: (i.publisher_count, i.subscriber_count)
                      for t, i in ctx.ros_graph().topics.items()}
            distance = min(max(int(self._opt("orphan", "max_edit_distance", 1)), 1), 8)
            self._settle("orphan", wd.orphan_findings(counts, distance,
                                                      self._list("orphan", "allowlist")))
        if self.modes["param_drift"] != "off":
            await self._read_parameters(sorted(armed), time.monotonic())
            expect = {k[len("param_drift.expect."):]: v for k, v in self.config.items()
                      if k.startswith("param_drift.expect.")}
            base = self.baselines if bool(self._opt("param_drift", "baseline", True)) else {}
            found = wd.drift_findings(base, self.drift_values, expect,
                                      self._list("param_drift", "ignore"))
            measured_all = all(n in self.drift_values for n in armed)
            if found or measured_all:  # no clear until every armed app was measured
                self._settle("param_drift", found)
        if self.modes["lifecycle_expectation"] != "off":
            required = await self._read_lifecycle(apps)
            found = wd.lifecycle_findings(
                required, self.unmeasured, self.managed,
                int(self._opt("lifecycle_expectation", "unreadable_after", 60)))
            self._settle("lifecycle_expectation", [f for f in found if f.node in armed])
        self.ticks += 1

    def _settle(self, det: str, found: list[Finding]) -> None:
        held = self.graces[det].filter(found)
        self.findings[det] = held
        if self.modes[det] != "raise" or self.ctx is None:
            return
        reports = []
        for code in DETECTORS[det][0]:
            event, severity, text = wd.aggregate(code, held)
            if event == "FAILED":
                self.raised.add(code)
            elif code not in self.raised:
                continue  # nothing raised before: no PASSED noise
            else:
                self.raised.discard(code)
            reports.append(Report(code, event, severity, text,
                                  self.ctx.fault_source(APP_ID)))
        if reports:
            self.ctx.report_faults(reports)

    async def _read_parameters(self, armed: list[str], now: float) -> None:
        """Read nodes not measured yet, nodes whose parameters changed (/parameter_events
        through the sample pool) and, every `full_sweep_sec`, all of them."""
        assert self.ctx is not None
        budget = max(int(self._opt("param_drift", "max_reads_per_tick", 8)), 1)
        if not armed:
            return
        stats = self.ctx.topic_stats(PARAMETER_EVENTS)
        if stats is None:  # not pooled yet (or evicted): every node is read again
            await self.ctx.watch_topic(PARAMETER_EVENTS, PARAMETER_EVENT_TYPE)
            self._dirty.update(armed)
            self._events_seen = 0
        seen = stats.received if stats is not None else 0
        if seen != self._events_seen:
            changed = _event_node(self.ctx.newest_sample(PARAMETER_EVENTS))
            if seen - self._events_seen == 1 and changed:
                self._dirty.add(changed)
            else:  # several events between ticks (the pool keeps the newest): read all
                self._dirty.update(armed)
            self._events_seen = seen
        if now - self._last_sweep >= float(self._opt("param_drift", "full_sweep_sec", 60)):
            self._dirty.update(armed)
            self._last_sweep = now
        todo = [n for n in armed if n not in self.drift_values or n in self._dirty][:budget]
        for fqn in todo:
            self._dirty.discard(fqn)
            try:
                values = await self.ctx.node_parameters(fqn)
            except Exception:  # a silent node is not a drift
                continue
            values.pop("use_sim_time", None)
            base = self.baselines.setdefault(fqn, dict(values))
            # A value the gateway itself set (PUT or reset) is the new baseline, not a drift.
            for name, value in self.ctx.parameters_set_here(fqn).items():
                if name in values and values[name] == value:
                    base[name] = value
            self.drift_values[fqn] = values

    async def _read_lifecycle(self, apps: dict[str, Any]) -> dict[str, str | None]:
        assert self.ctx is not None
        wanted = self._list("lifecycle_expectation", "require_active")
        graph = self.ctx.ros_graph()
        out: dict[str, str | None] = {}
        for fqn, app in apps.items():
            leaf = fqn.rsplit("/", 1)[-1]
            if not any(w in (app.id, fqn, leaf) for w in wanted):
                continue
            node = graph.node(fqn)
            services = {n for n, _ in node.services} if node else set()
            self.managed[fqn] = f"{fqn}/get_state" in services
            label = None
            if self.managed[fqn]:
                label = await self._state_label(fqn)
            self.unmeasured[fqn] = 0 if label is not None else self.unmeasured.get(fqn, 0) + 1
            self.lifecycle[fqn] = label
            out[fqn] = label
        return out

    async def _state_label(self, fqn: str) -> str | None:
        from lifecycle_msgs.srv import GetState  # noqa: PLC0415 - ROS types load on first use

        assert self.ctx is not None
        try:
            resp = await self.ctx.call_service(f"{fqn}/get_state", "lifecycle_msgs/srv/GetState",
                                               GetState.Request(), 2.0)
        except Exception:  # counted as unmeasured
            return None
        return str(resp.current_state.label) or None

    # route ----------------------------------------------------------------------------------
    async def status(self, request: Any) -> dict[str, Any]:
        """Warm-up state per entity and what each detector holds now."""
        assert self.ctx is not None
        if not self.running or self.ticks == 0:
            raise ApiError(503, "service-unavailable", "The graph watchdog has not run a "
                           "sweep yet" if self.running else "The graph watchdog is stopped")
        apps = {a.id: a for a in self.ctx.entities().apps.values() if a.node_fqn}
        entities = []
        for aid in sorted(self.arming.streak):
            armed = self.arming.armed(aid)
            fqn = apps[aid].node_fqn if aid in apps else None
            entities.append({"id": aid, "first_seen_tick": self.arming.first_seen.get(aid),
                             "armed": armed, "state": "armed" if armed else "warming_up",
                             "lifecycle": self.lifecycle.get(fqn or "")})
        all_armed = bool(entities) and all(e["armed"] for e in entities)
        detectors = {det: {"mode": self.modes[det], "codes": list(DETECTORS[det][0]),
                           "findings": [{"code": f.code, "key": f.key, "severity": f.severity,
                                         "message": f.message} for f in self.findings[det]]}
                     for det in DETECTORS}
        return {f"x-{self.ctx.vendor}-watchdog": {
            "schema_version": SCHEMA_VERSION, "warmup_cycles": self.arming.warmup,
            "global_state": "armed" if all_armed else "warming_up", "tick": self.arming.tick,
            "timestamp_ns": time.time_ns(), "entities": entities, "detectors": detectors}}
