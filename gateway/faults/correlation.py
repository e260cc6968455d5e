"""Fault correlation: hierarchical (root cause mutes symptoms) and auto-cluster rules (pure)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPRESENTATIVES = ("first", "most_recent", "highest_severity")


class CorrelationConfigError(ValueError):
    """A rules file that cannot be used; the message names the problem."""


def _wildcard(code: str) -> re.Pattern[str]:
    return re.compile("^" + ".*".join(re.escape(p) for p in code.split("*")) + "$")


@dataclass(frozen=True)
class CodeSet:
    """Fault codes with `*` wildcards."""

    codes: tuple[str, ...]
    _res: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_res", tuple(_wildcard(c) for c in self.codes))

    def matches(self, code: str) -> bool:
        """True when code matches one of the entries."""
        return any(r.match(code) for r in self._res)


@dataclass(frozen=True)
class Rule:
    """One correlation rule."""

    id: str
    name: str
    mode: str  # hierarchical | auto_cluster
    window_ms: int
    root: CodeSet = CodeSet(())
    symptoms: CodeSet = CodeSet(())
    mute_symptoms: bool = True
    auto_clear_with_root: bool = True
    match: CodeSet = CodeSet(())
    min_count: int = 3
    show_as_single: bool = True
    representative: str = "first"


@dataclass(frozen=True)
class CorrelationConfig:
    """The rules file."""

    enabled: bool = False
    default_window_ms: int = 500
    rules: tuple[Rule, ...] = ()


def _codes(entry: Any, patterns: Mapping[str, tuple[str, ...]], where: str) -> list[str]:
    """Codes of a pattern reference: `name`, `{pattern: name}`, `{codes: [...]}` or a list."""
    if isinstance(entry, str):
        if entry in patterns:
            return list(patterns[entry])
        return [entry]
    if isinstance(entry, Mapping):
        if "pattern" in entry:
            name = str(entry["pattern"])
            if name not in patterns:
                raise CorrelationConfigError(f"{where}: unknown pattern '{name}'")
            return list(patterns[name])
        if "codes" in entry:
            return [str(c) for c in entry["codes"] or ()]
    if isinstance(entry, list):
        return [c for e in entry for c in _codes(e, patterns, where)]
    raise CorrelationConfigError(f"{where}: expected a pattern reference, got {entry!r}")


def parse_config(tree: Any) -> CorrelationConfig:
    """A CorrelationConfig from the YAML tree (a top-level `correlation:` key is optional)."""
    if not tree:
        return CorrelationConfig()
    if isinstance(tree, Mapping) and isinstance(tree.get("correlation"), Mapping):
        tree = tree["correlation"]
    if not isinstance(tree, Mapping):
        raise CorrelationConfigError("the rules file must be a mapping")
    default_window = int(tree.get("default_window_ms", 500))
    patterns: dict[str, tuple[str, ...]] = {}
    for name, value in (tree.get("patterns") or {}).items():
        codes = value.get("codes") if isinstance(value, Mapping) else value
        if isinstance(codes, str):
            codes = [codes]
        if not isinstance(codes, list):
            raise CorrelationConfigError(f"pattern '{name}': expected a list of codes")
        patterns[str(name)] = tuple(str(c) for c in codes)
    rules: list[Rule] = []
    for i, raw in enumerate(tree.get("rules") or ()):
        if not isinstance(raw, Mapping):
            raise CorrelationConfigError(f"rules[{i}]: expected a mapping")
        rid = str(raw.get("id") or f"rule_{i}")
        mode = str(raw.get("mode", "hierarchical"))
        where = f"rule '{rid}'"
        window = int(raw.get("window_ms", default_window))
        common: dict[str, Any] = {"id": rid, "name": str(raw.get("name", rid)), "mode": mode,
                                  "window_ms": window}
        if mode == "hierarchical":
            root = raw.get("root_cause") or {}
            root_codes = _codes(root, patterns, where + " root_cause")
            symptoms = _codes(raw.get("symptoms") or [], patterns, where + " symptoms")
            if not root_codes or not symptoms:
                raise CorrelationConfigError(f"{where}: needs root_cause codes and symptoms")
            rules.append(Rule(**common, root=CodeSet(tuple(root_codes)),
                              symptoms=CodeSet(tuple(symptoms)),
                              mute_symptoms=bool(raw.get("mute_symptoms", True)),
                              auto_clear_with_root=bool(raw.get("auto_clear_with_root", True))))
        elif mode == "auto_cluster":
            match = _codes(raw.get("match") or [], patterns, where + " match")
            if not match:
                raise CorrelationConfigError(f"{where}: needs match patterns")
            rep = str(raw.get("representative", "first"))
            if rep not in REPRESENTATIVES:
                raise CorrelationConfigError(
                    f"{where}: representative must be one of {', '.join(REPRESENTATIVES)}")
            rules.append(Rule(**common, match=CodeSet(tuple(match)),
                              min_count=max(1, int(raw.get("min_count", 3))),
                              show_as_single=bool(raw.get("show_as_single", True)),
                              representative=rep))
        else:
            raise CorrelationConfigError(f"{where}: unknown mode '{mode}'")
    return CorrelationConfig(bool(tree.get("enabled", True)), default_window, tuple(rules))


def load_config(path: str | Path) -> CorrelationConfig:
    """Read and parse a rules file."""
    try:
        tree = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise CorrelationConfigError(f"cannot read {path}: {exc}") from None
    return parse_config(tree)


@dataclass
class Muted:
    """A symptom muted by its root cause."""

    fault_code: str
    root_cause_code: str
    rule_id: str
    delay_ms: int

    def to_dict(self) -> dict[str, Any]:
        """List item of muted_faults."""
        return {"fault_code": self.fault_code, "root_cause_code": self.root_cause_code,
                "rule_id": self.rule_id, "delay_ms": self.delay_ms}


@dataclass
class Cluster:
    """Matching faults of an auto-cluster rule that arrived within its window."""

    cluster_id: str
    rule_id: str
    codes: list[str] = field(default_factory=list)
    severities: dict[str, int] = field(default_factory=dict)
    first_ns: int = 0
    last_ns: int = 0


@dataclass(frozen=True)
class Decision:
    """How correlation treats a fault occurrence."""

    muted: Muted | None = None
    cluster_id: str | None = None


class CorrelationEngine:
    """Rule state: active root causes, symptom links and clusters; time is passed in."""

    def __init__(self, config: CorrelationConfig) -> None:
        self.config = config
        self.rules = {r.id: r for r in config.rules} if config.enabled else {}
        self.roots: dict[str, dict[str, int]] = {}  # rule id -> root code -> onset ns
        self.links: dict[str, tuple[str, str]] = {}  # symptom -> (root code, rule id)
        self.muted: dict[str, Muted] = {}
        self.clusters: list[Cluster] = []
        self._cluster_seq = 0

    @property
    def enabled(self) -> bool:
        """True when at least one rule is in force."""
        return bool(self.rules)

    def on_onset(self, code: str, severity: int, now_ns: int) -> Decision:
        """A fault occurrence started (new or reactivated): record roots, mute, cluster."""
        muted: Muted | None = None
        cluster_id: str | None = None
        for rule in self.rules.values():
            if rule.mode == "hierarchical":
                if rule.root.matches(code):
                    self.roots.setdefault(rule.id, {})[code] = now_ns
                    continue
                if code in self.links or not rule.symptoms.matches(code):
                    continue
                best = self._root_within(rule, now_ns)
                if best is None:
                    continue
                root, onset = best
                self.links[code] = (root, rule.id)
                if rule.mute_symptoms and muted is None:
                    muted = self.muted[code] = Muted(code, root, rule.id,
                                                     (now_ns - onset) // 1_000_000)
            elif rule.match.matches(code):
                cluster_id = self._cluster(rule, code, severity, now_ns) or cluster_id
        return Decision(muted, cluster_id)

    def _root_within(self, rule: Rule, now_ns: int) -> tuple[str, int] | None:
        best: tuple[str, int] | None = None
        for root, onset in self.roots.get(rule.id, {}).items():
            if 0 <= now_ns - onset <= rule.window_ms * 1_000_000 and (
                    best is None or onset > best[1]):
                best = (root, onset)
        return best

    def _cluster(self, rule: Rule, code: str, severity: int, now_ns: int) -> str:
        window = rule.window_ms * 1_000_000
        for cl in reversed(self.clusters):
            if cl.rule_id == rule.id and now_ns - cl.first_ns <= window:
                if code not in cl.codes:
                    cl.codes.append(code)
                cl.severities[code] = max(severity, cl.severities.get(code, severity))
                cl.last_ns = now_ns
                return cl.cluster_id
        # a pending cluster whose window passed is dropped; an active one stays listed
        self.clusters = [c for c in self.clusters
                         if c.rule_id != rule.id or len(c.codes) >= rule.min_count]
        self._cluster_seq += 1
        cl = Cluster(f"{rule.id}-{self._cluster_seq}", rule.id, [code], {code: severity},
                     now_ns, now_ns)
        self.clusters.append(cl)
        return cl.cluster_id

    def on_clear(self, code: str, in_scope: Iterable[str] | None = None) -> list[str]:
        """A fault was cleared; returns symptoms to clear with it (limited to in_scope if given)."""
        scope = None if in_scope is None else set(in_scope)
        auto: list[str] = []
        for rule_id, roots in self.roots.items():
            if roots.pop(code, None) is None:
                continue
            rule = self.rules.get(rule_id)
            for symptom, (root, rid) in list(self.links.items()):
                if root != code or rid != rule_id:
                    continue
                if rule is not None and rule.auto_clear_with_root and (
                        scope is None or symptom in scope):
                    auto.append(symptom)
                else:
                    self.links.pop(symptom, None)
                    self.muted.pop(symptom, None)  # root gone: the symptom shows again
        self.links.pop(code, None)
        self.muted.pop(code, None)
        self.forget_cluster_member(code)
        return auto

    def forget_cluster_member(self, code: str) -> None:
        """Drop a cleared fault from its clusters; empty clusters disappear."""
        for cl in self.clusters:
            if code in cl.codes:
                cl.codes.remove(code)
                cl.severities.pop(code, None)
        self.clusters = [c for c in self.clusters if c.codes]

    def _active_clusters(self) -> list[tuple[Cluster, Rule]]:
        out = []
        for cl in self.clusters:
            rule = self.rules.get(cl.rule_id)
            if rule is not None and len(cl.codes) >= rule.min_count:
                out.append((cl, rule))
        return out

    @staticmethod
    def representative(cl: Cluster, rule: Rule) -> str:
        """The code a cluster shows as."""
        if rule.representative == "most_recent":
            return cl.codes[-1]
        if rule.representative == "highest_severity":
            top = max(cl.severities.get(c, 0) for c in cl.codes)
            return next(c for c in cl.codes if cl.severities.get(c, 0) == top)
        return cl.codes[0]

    def hidden(self) -> set[str]:
        """Codes kept out of the default list: muted symptoms and non-representative members."""
        out = set(self.muted)
        for cl, rule in self._active_clusters():
            if rule.show_as_single:
                rep = self.representative(cl, rule)
                out.update(c for c in cl.codes if c != rep)
        return out

    def is_muted(self, code: str) -> bool:
        """True for a muted symptom (not published on the stream)."""
        return code in self.muted

    def muted_faults(self) -> list[dict[str, Any]]:
        """muted_faults items."""
        return [m.to_dict() for m in self.muted.values()]

    def cluster_items(self, iso: Any) -> list[dict[str, Any]]:
        """clusters items of the active clusters; iso formats epoch ns."""
        out = []
        for cl, rule in self._active_clusters():
            rep = self.representative(cl, rule)
            out.append({"cluster_id": cl.cluster_id, "rule_id": rule.id, "rule_name": rule.name,
                        "representative_code": rep,
                        "representative_severity": cl.severities.get(rep, 0),
                        "fault_codes": list(cl.codes), "first_at": iso(cl.first_ns),
                        "last_at": iso(cl.last_ns)})
        return out

    def cluster_count(self) -> int:
        """Number of active clusters."""
        return len(self._active_clusters())

    def to_state(self) -> dict[str, Any]:
        """Everything needed to resume after a restart."""
        return {
            "roots": self.roots,
            "links": {k: list(v) for k, v in self.links.items()},
            "muted": [m.to_dict() for m in self.muted.values()],
            "clusters": [vars(c) for c in self.clusters],
            "cluster_seq": self._cluster_seq,
        }

    def load_state(self, data: Mapping[str, Any]) -> None:
        """Resume from to_state() output (rules that no longer exist are dropped)."""
        self.roots = {r: dict(v) for r, v in (data.get("roots") or {}).items()
                      if r in self.rules}
        self.links = {k: (v[0], v[1]) for k, v in (data.get("links") or {}).items()
                      if v[1] in self.rules}
        self.muted = {m["fault_code"]: Muted(**m) for m in data.get("muted") or ()
                      if m.get("rule_id") in self.rules}
        self.clusters = [Cluster(**c) for c in data.get("clusters") or ()
                         if c.get("rule_id") in self.rules]
        self._cluster_seq = int(data.get("cluster_seq", 0))
