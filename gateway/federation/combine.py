"""Merging a collection's local items with the peers' answers (pure).

Peer items are re-serialized (items.py), their member ids re-attributed to fleet app ids
(rule 5), then ids are assigned across the merged list: data by rule 4, operations by rules
1-3 over every gateway's items, configurations keep `<app>:<param>` with the app renamed.
Peers that did not answer make the list `partial` with `failed_peers` and `peer_failures`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..http.jsonutil import dumps
from ..model.items import operation_fleet_ids, reattribute
from .items import MAX_PEER_PATH, reserialize, topic_of
from .settings import LOCAL

Rename = Callable[[str, str], str]  # (gateway, its app id) -> fleet app id


@dataclass
class _Prepared:
    """A peer answer's items as the merge takes them, and what it learned from the answer."""

    kept: list[dict[str, Any]]
    dropped: list[dict[str, Any]]
    nodes: dict[str, list[str]]
    # serialized items by (index in kept, id assigned in the merge)
    serial: dict[tuple[int, Any], orjson.Fragment] = field(default_factory=dict)

    def fragment(self, k: int, item: dict[str, Any]) -> orjson.Fragment:
        """Its k-th item (a copy with its id assigned), serialized once per id it is given."""
        key = (k, item.get("id"))
        out = self.serial.get(key)
        if out is None:
            if len(self.serial) >= 4 * len(self.kept) + 4:
                self.serial.clear()
            out = self.serial[key] = orjson.Fragment(dumps(item))
        return out


@dataclass
class PeerAnswer:
    """A peer's answer to one fan-out call: its raw items, or the reason it failed."""

    peer: str
    items: list[Any] = field(default_factory=list)
    reason: str | None = None
    body: dict[str, Any] = field(default_factory=dict)
    # (collection, fleet view, its items checked and re-attributed): combine's memo; a peer
    # answering the same bytes again is not parsed nor checked again (fanout.py)
    prepared: tuple[str, Any, _Prepared] | None = field(default=None, repr=False,
                                                         compare=False)

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
    item_id = item.get("id")
    # configurations: `<app>:<param>`; data a site qualified: `<member>:<topic>`
    if isinstance(item_id, str) and (collection == "configurations" or (
            collection == "data" and not item_id.startswith("/"))):
        member = item_id.partition(":")[0]
        item["id"] = reattribute(item_id, {member: rename(peer, member)})


def _assign(collection: str, tagged: Sequence[tuple[str, dict[str, Any]]], xv: str) -> None:
    if collection == "data":  # fleet_ids (rules 2, 4) without an object per item
        # A site primary's item may come qualified already (`<member>:<topic>`, its member
        # renamed by _reattribute): it keeps that id, and its topic counts as the others'.
        topics = [topic_of(i["id"]) for _, i in tagged]
        totals = Counter(topics)
        if len(totals) == len(topics):
            return
        for (_, item), topic in zip(tagged, topics, strict=True):
            if totals[topic] > 1 and item["id"] == topic:
                members = _members(item, xv)
                if members:
                    item["id"] = f"{members[0]}:{topic}"
        return
    if collection == "operations":
        rows = []
        for g, i in tagged:
            vx = i[xv]
            rows.append((g, _members(i, xv), vx[f"ros2_{vx['ros2_kind']}"]))
        ids = operation_fleet_ids(rows)
    else:
        return
    for (_, item), new_id in zip(tagged, ids, strict=True):
        item["id"] = new_id


def _prepare(collection: str, xv: str, answer: PeerAnswer, rename: Rename) -> _Prepared:
    """A peer answer's valid items re-serialized and re-attributed, its dropped items and its
    unavailable/failed nodes."""
    found = answer.body.get(xv)
    peer_xv: dict[str, Any] = found if isinstance(found, dict) else {}
    nodes_of: dict[str, list[str]] = {}
    for key in ("unavailable_nodes", "failed_nodes"):
        nodes = peer_xv.get(key)
        if isinstance(nodes, list):
            nodes_of[key] = [f"{answer.peer}:{n}" for n in nodes if isinstance(n, str)]
    kept, lost = reserialize(collection, answer.items, xv, answer.peer)
    for item in kept:
        _reattribute(collection, item, xv, answer.peer, rename)
        if collection == "logs":
            item["id"] = f"{answer.peer}:{item['id']}"
        if collection in ("logs", "faults", "version-info"):
            mark_peer(item.setdefault(xv, {}), answer.peer)
    return _Prepared(kept, lost, nodes_of)


def mark_peer(vendor: dict[str, Any], peer: str) -> None:
    """`peer`: the peer that gave this gateway the item or event. Through more than one level
    (a site), `peer_path` also lists the gateways it passed on its way up, down to the one
    that made it: `["site1", "r1"]`, so the robot stays readable at the fleet primary."""
    below = vendor.get("peer_path")
    if not isinstance(below, list):
        below = [vendor["peer"]] if isinstance(vendor.get("peer"), str) else []
    vendor["peer"] = peer
    if below:
        vendor["peer_path"] = [peer, *below][:MAX_PEER_PATH]


def combine(collection: str, xv: str, local_items: Sequence[dict[str, Any]] | None,
            answers: Sequence[PeerAnswer], rename: Rename, limit: int | None = None,
            memo: Any = None, fragments: bool = False) -> Combined:
    """The merged collection; local_items None when this gateway contributes nothing.

    `memo` names the state of `rename` (the fleet view): while it is the same object, a peer
    answer already prepared for this collection is not checked and re-attributed again.
    With `fragments` (not for logs) peer items come serialized (orjson.Fragment), each once
    per prepared answer and id: for a merge that is only serialized.
    """
    tagged: list[tuple[str, dict[str, Any]]] = [(LOCAL, i) for i in (local_items or ())]
    sources: list[tuple[_Prepared, int] | None] = [None] * len(tagged)
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
        known = answer.prepared
        if memo is not None and known is not None and known[1] is memo \
                and known[0] == collection:
            prepared = known[2]
        else:
            prepared = _prepare(collection, xv, answer, rename)
            if memo is not None:
                answer.prepared = (collection, memo, prepared)
        for key, nodes in prepared.nodes.items():
            peer_nodes.setdefault(key, []).extend(nodes)
        dropped.extend(prepared.dropped)
        tagged.extend((answer.peer, dict(item)) for item in prepared.kept)  # ids assigned below
        sources.extend((prepared, k) for k in range(len(prepared.kept)))
    _assign(collection, tagged, xv)
    items: list[Any] = [i for _, i in tagged]
    if fragments and collection != "logs":
        items = [i if src is None else src[0].fragment(src[1], i) for (_, i), src in zip(
            tagged, sources, strict=True)]
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
