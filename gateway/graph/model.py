"""The function graph snapshot: topics, nodes, edges with metrics, pipeline status (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model.timestamps import iso

SCHEMA_VERSION = "2.0.0"
EXCLUDED_TOPICS = frozenset({"/parameter_events", "/rosout", "/diagnostics"})


@dataclass(frozen=True)
class GraphConfig:
    """The verdict thresholds (plugin settings of the same names)."""

    freshness_floor_sec: float = 5.0
    freshness_headroom_factor: float = 3.0
    expected_frequency_hz_default: float = 30.0
    stale_grace_sec: float = 2.0
    degraded_frequency_ratio: float = 0.5
    drop_rate_percent_threshold: float = 5.0
    multi_publisher_rate: str = "annotate"  # or "suppress"

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> GraphConfig:
        """From plugin settings; unknown keys are ignored, values coerced."""
        kw: dict[str, Any] = {}
        for name, f in cls.__dataclass_fields__.items():
            if name in config:
                kw[name] = str(config[name]) if f.type == "str" else float(config[name])
        out = cls(**kw)
        if out.multi_publisher_rate not in ("annotate", "suppress"):
            raise ValueError("multi_publisher_rate must be annotate or suppress")
        return out


@dataclass(frozen=True)
class AppView:
    """One scoped app: its node, reachability and topics (remembered while it is gone)."""

    id: str
    node_fqn: str
    online: bool
    last_seen_ns: int
    publishes: tuple[str, ...] = ()
    subscribes: tuple[str, ...] = ()


@dataclass(frozen=True)
class TopicMetrics:
    """What is known about a topic's flow: from the sample pool or from /diagnostics."""

    last_ns: int = 0  # newest sample (or diagnostics report); 0: never
    frequency_hz: float | None = None
    latency_ms: float | None = None
    drop_rate_percent: float = 0.0
    expected_hz: float | None = None  # from /diagnostics or a learned baseline
    source: str | None = None


@dataclass
class Edge:
    """One publisher -> subscriber pair on a topic."""

    source: str
    target: str
    topic: str
    metrics: dict[str, Any] = field(default_factory=dict)
    ratio: float | None = None
    degraded: bool = False


def is_graph_topic(name: str) -> bool:
    """Topics a graph shows: not infrastructure, not NITROS negotiation topics."""
    segs = [s for s in name.split("/") if s]
    return name not in EXCLUDED_TOPICS and "nitros" not in segs and not (
        segs and segs[-1].endswith("_supported_types"))


def window_sec(cfg: GraphConfig, expected_hz: float | None) -> float:
    """Freshness window: max(floor, headroom / expected rate)."""
    hz = expected_hz if expected_hz and expected_hz > 0 else cfg.expected_frequency_hz_default
    return max(cfg.freshness_floor_sec, cfg.freshness_headroom_factor / hz)


def rate_hz(times_ns: Sequence[int], now_ns: int, window_s: float) -> float | None:
    """Receive rate over the samples inside the window (None with fewer than two)."""
    cutoff = now_ns - int(window_s * 1e9)
    inside = [t for t in times_ns if t >= cutoff]
    if len(inside) < 2 or inside[-1] <= inside[0]:
        return None
    return (len(inside) - 1) / ((inside[-1] - inside[0]) / 1e9)


def edge_metrics(cfg: GraphConfig, m: TopicMetrics | None, publisher_count: int | None,
                 now_ns: int) -> tuple[dict[str, Any], float | None, bool]:
    """(metrics object, frequency ratio, degraded) of one edge."""
    out: dict[str, Any] = {}
    if publisher_count is not None:
        out["publisher_count"] = publisher_count
        if publisher_count > 1:
            out["rate_ambiguous"] = True
    if m is None or m.last_ns == 0:
        out.update(frequency_hz=None, latency_ms=None, drop_rate_percent=0.0,
                   metrics_status="pending")
        return out, None, False
    if m.source:
        out["source"] = m.source
    freq = m.frequency_hz
    if out.get("rate_ambiguous") and cfg.multi_publisher_rate == "suppress":
        freq = None
    out.update(frequency_hz=_round(freq), latency_ms=_round(m.latency_ms),
               drop_rate_percent=round(m.drop_rate_percent, 3))
    age = (now_ns - m.last_ns) / 1e9
    if age > window_sec(cfg, m.expected_hz) + cfg.stale_grace_sec:
        out.update(frequency_hz=None, metrics_status="error", error_reason="metrics_stale")
        return out, 0.0, False
    out["metrics_status"] = "active"
    ratio = freq / m.expected_hz if freq is not None and m.expected_hz else None
    degraded = (ratio is not None and ratio < cfg.degraded_frequency_ratio) or \
        m.drop_rate_percent > cfg.drop_rate_percent_threshold
    return out, ratio, degraded


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def snapshot(function_id: str, apps: Sequence[AppView], metrics: Mapping[str, TopicMetrics],
             publisher_counts: Mapping[str, int], cfg: GraphConfig, now_ns: int,
             xv: str = "x-vendor") -> dict[str, Any]:
    """The `x-vendor-graph` body of one function."""
    apps = sorted({a.id: a for a in apps}.values(), key=lambda a: a.id)
    topics = sorted({t for a in apps for t in (*a.publishes, *a.subscribes) if is_graph_topic(t)})
    topic_ids = {t: f"topic-{i}" for i, t in enumerate(topics, 1)}
    subscribers: dict[str, list[str]] = {}
    for a in apps:
        for t in sorted(a.subscribes):
            subscribers.setdefault(t, []).append(a.id)
    edges: list[Edge] = []
    for a in apps:
        for t in sorted(a.publishes):
            if t not in topic_ids:
                continue
            for sub in subscribers.get(t, []):
                body, ratio, degraded = edge_metrics(cfg, metrics.get(t),
                                                     publisher_counts.get(t), now_ns)
                edges.append(Edge(a.id, sub, t, body, ratio, degraded))
    nodes = []
    for a in apps:
        node: dict[str, Any] = {"entity_id": a.id,
                                "node_status": "reachable" if a.online else "unreachable"}
        if not a.online and a.last_seen_ns:
            node["last_seen"] = iso(a.last_seen_ns)
        nodes.append(node)
    if any(e.metrics["metrics_status"] == "error" for e in edges):
        status = "broken"
    elif any(e.degraded for e in edges) or any(not a.online for a in apps):
        status = "degraded"
    else:
        status = "healthy"
    bottleneck = None
    if status == "degraded":
        rated = [(e.ratio, i) for i, e in enumerate(edges, 1) if e.ratio is not None]
        if rated:
            bottleneck = f"edge-{min(rated)[1]}"
    return {f"{xv}-graph": {
        "schema_version": SCHEMA_VERSION,
        "graph_id": f"{function_id}-graph",
        "timestamp": iso(now_ns),
        "scope": {"type": "function", "entity_id": function_id},
        "pipeline_status": status,
        "bottleneck_edge": bottleneck,
        "topics": [{"topic_id": topic_ids[t], "name": t} for t in topics],
        "nodes": nodes,
        "edges": [{"edge_id": f"edge-{i}", "source": e.source, "target": e.target,
                   "topic_id": topic_ids[e.topic], "transport_type": "unknown",
                   "metrics": e.metrics} for i, e in enumerate(edges, 1)],
    }}


def diagnostics_metrics(status: Mapping[str, Any], received_ns: int,
                        source: str | None) -> TopicMetrics:
    """Topic metrics from one /diagnostics status (key/value pairs of a frequency monitor)."""
    values = {str(kv.get("key")): kv.get("value") for kv in status.get("values", [])}

    def num(*keys: str) -> float | None:
        for k in keys:
            try:
                return float(values[k])
            except (KeyError, TypeError, ValueError):
                continue
        return None

    freq = num("frame_rate_msg")
    if not freq:
        freq = num("frame_rate_node") if num("frame_rate_node") is not None else freq
    return TopicMetrics(last_ns=received_ns, frequency_hz=freq,
                        latency_ms=num("current_delay_from_realtime_ms"),
                        drop_rate_percent=num("drop_rate_percent", "drop_rate") or 0.0,
                        expected_hz=num("expected_frequency"), source=source)
