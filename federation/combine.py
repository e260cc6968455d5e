"""Merging a collection's local items with the peers' answers (pure).

Peer items are re-serialized (items.py), their member ids re-attributed to fleet app ids
(rule 5), then ids are assigned across the merged list: data by rule 4, operations by rules
1-3 over every gateway's items, configurations keep `<app>:<param>` with the app renamed.
Peers that did not answer make the list `partial` with `failed_peers` and `peer_failures`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gateway.model.items import FleetItem, fleet_ids, operation_fleet_ids, reattribute

from .items import reserialize
from .settings import LOCAL

Rename = Callable[[str, str], str]  # (gateway, its app id) -> fleet app id


@dataclass
class PeerAnswer:
    """A peer's answer to one fan-out call: its raw items, or the reason it failed."""

    peer: str
    items: list[Any] = field(default_factory=list)
    reason: str | None = None
    body: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the peer answered usable items."""
        return self.reason is None


@dataclass
class Combined:
    """Merged items and the x-vendor fields describing the merge."""

    items: list[dict[str, Any]]
    extra: dict[str, Any]


def _members(item: dict[str, Any], xv: str) -> tuple[str, ...]:
    return tuple((item.get(xv) or {}).get("member_ids") or ())


def _reattribute(collection: str, item: dict[str, Any], xv: str, peer: str,
                 rename: Rename) -> None:
    vx = item.get(xv)
    if isinstance(vx, dict) and vx.get("member_ids"):
        vx["member_ids"] = [rename(peer, m) for m in vx["member_ids"]]
    if collection == "configurations" and isinstance(item.get("id"), str):
        member = item["id"].partition(":")[0]
        item["id"] = reattribute(item["id"], {member: rename(peer, member)})


def _assign(collection: str, tagged: Sequence[tuple[str, dict[str, Any]]], xv: str) -> None:
    if collection == "data":
        ids = fleet_ids([FleetItem(g, _members(i, xv), i["id"]) for g, i in tagged])
    elif collection == "operations":
        rows = []
        for g, i in tagged:
            vx = i[xv]
            rows.append((g, _members(i, xv), vx[f"ros2_{vx['ros2_kind']}"]))
        ids = operation_fleet_ids(rows)
    else:
        return
    for (_, item), new_id in zip(tagged, ids, strict=True):
        item["id"] = new_id


def combine(collection: str, xv: str, local_items: Sequence[dict[str, Any]] | None,
            answers: Sequence[PeerAnswer], rename: Rename, limit: int | None = None
            ) -> Combined:
    """The merged collection; local_items None when this gateway contributes nothing."""
    tagged: list[tuple[str, dict[str, Any]]] = [(LOCAL, i) for i in (local_items or ())]
    dropped: list[dict[str, Any]] = []
    failures: list[dict[str, str]] = []
    contributors = [LOCAL] if local_items is not None else []
    peer_nodes: dict[str, list[str]] = {}
    for answer in answers:
        if not answer.ok:
            failures.append({"peer": answer.peer, "reason": str(answer.reason)})
            continue
        if answer.body.get("omitted"):
            continue  # the peer lacks the route (404/501): its members are omitted
        contributors.append(answer.peer)
        found = answer.body.get(xv)
        peer_xv: dict[str, Any] = found if isinstance(found, dict) else {}
        for key in ("unavailable_nodes", "failed_nodes"):
            nodes = peer_xv.get(key)
            if isinstance(nodes, list):
                peer_nodes.setdefault(key, []).extend(
                    f"{answer.peer}:{n}" for n in nodes if isinstance(n, str))
        kept, lost = reserialize(collection, answer.items, xv, answer.peer)
        dropped.extend(lost)
        for item in kept:
            _reattribute(collection, item, xv, answer.peer, rename)
            if collection == "logs":
                item["id"] = f"{answer.peer}:{item['id']}"
            if collection in ("logs", "faults", "version-info"):
                item.setdefault(xv, {})["peer"] = answer.peer
            tagged.append((answer.peer, item))
    _assign(collection, tagged, xv)
    items = [i for _, i in tagged]
    if collection == "logs":
        items.sort(key=lambda i: str(i.get("timestamp", "")))
        if limit is not None:
            items = items[-limit:] if limit > 0 else []
    extra: dict[str, Any] = {"contributors": contributors}
    if failures:
        extra["partial"] = True
        extra["failed_peers"] = [f["peer"] for f in failures]
        extra["peer_failures"] = failures
    if peer_nodes:
        extra["partial"] = True
        extra.update(peer_nodes)
    if dropped:
        extra["peer_dropped_items"] = dropped
    return Combined(items, extra)
