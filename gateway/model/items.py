"""Item ids on aggregating entities (spec "Item ids" rules 1-3 and 6), pure and shared.

Rule 1: an item's id is its short name (the last segment of its middleware path).
Rule 3: when one member carries the same short name twice, those items use their full path
without the leading slash instead (decided per member, so `<path>` on the member itself).
Rule 2: when more than one item of the merged collection still has the same id, each copy is
addressed `<member_id>:<item_id>` (the split is on the first colon).
Rule 6: a bare id (short name, or full path with or without the leading slash) that names
exactly one item works wherever the assigned id does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class MemberItem:
    """One item as a member contributes it: the member's id and the item's middleware path."""

    member_id: str
    path: str

    @property
    def short(self) -> str:
        """The last segment of the path (rule 1's id)."""
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    @property
    def long(self) -> str:
        """The full path without its leading slash (rule 3's id)."""
        return self.path.strip("/")


class ItemLookupError(LookupError):
    """An id names no item (`candidates` empty) or several (`candidates` lists their ids)."""

    def __init__(self, requested: str, candidates: Sequence[str]) -> None:
        self.requested = requested
        self.candidates = list(candidates)
        what = "is ambiguous" if self.candidates else "names no item"
        super().__init__(f"'{requested}' {what}")


def member_local_ids(items: Sequence[MemberItem]) -> list[str]:
    """Rules 1 and 3: each item's id on its own member, in input order."""
    counts = Counter((i.member_id, i.short) for i in items)
    return [i.long if counts[(i.member_id, i.short)] > 1 else i.short for i in items]


def assign_ids(items: Sequence[MemberItem]) -> list[str]:
    """Rules 1-3: the id of each item of a merged collection, in input order."""
    local = member_local_ids(items)
    totals = Counter(local)
    return [f"{i.member_id}:{lid}" if totals[lid] > 1 else lid
            for i, lid in zip(items, local, strict=True)]


def resolve(requested: str, items: Sequence[MemberItem], ids: Sequence[str]) -> int:
    """Index of the item `requested` addresses (its id, or rule 6); ItemLookupError otherwise."""
    for k, assigned in enumerate(ids):
        if assigned == requested:
            return k
    member, sep, rest = requested.partition(":")
    if sep and any(i.member_id == member for i in items):
        pool = [k for k, i in enumerate(items) if i.member_id == member]
        name = rest
    else:
        pool = list(range(len(items)))
        name = requested
    bare = name.strip("/")
    matches = [k for k in pool
               if items[k].short == name or (bare and items[k].long == bare)]
    if len(matches) == 1:
        return matches[0]
    raise ItemLookupError(requested, [ids[k] for k in matches])


# Rules 4 and 5: collections merged across gateways (the aggregating gateway's fan-out).


@dataclass(frozen=True)
class FleetItem:
    """One item of a collection merged across gateways.

    `member_ids` are fleet app ids (rule 5 already applied); `local_id` is the item's id on
    its member (rules 1 and 3), or the topic path for data.
    """

    gateway: str
    member_ids: tuple[str, ...]
    local_id: str


def reattribute(item_id: str, rename: dict[str, str]) -> str:
    """Rule 5: a `<member>:<item>` id with the member half renamed; other ids unchanged."""
    member, sep, rest = item_id.partition(":")
    if sep and member in rename:
        return f"{rename[member]}:{rest}"
    return item_id


def fleet_ids(items: Sequence[FleetItem]) -> list[str]:
    """Rules 2 and 4: bare ids, `<member_id>:<id>` for every copy of an id used twice.

    A data topic is one item per gateway (its members merged, rule 4), so a topic path is
    qualified only when two gateways each contribute it.
    """
    totals = Counter(i.local_id for i in items)
    return [f"{i.member_ids[0]}:{i.local_id}" if totals[i.local_id] > 1 and i.member_ids
            else i.local_id for i in items]


def operation_fleet_ids(paths: Sequence[tuple[str, tuple[str, ...], str]]) -> list[str]:
    """Rules 1-3 over (gateway, member ids, path) of operations merged across gateways."""
    local = member_local_ids([MemberItem(m[0] if m else g, p) for g, m, p in paths])
    return fleet_ids([FleetItem(g, m, lid) for (g, m, _), lid in zip(paths, local, strict=True)])


def resolve_topic(requested: str, topics: Sequence[str], member_ids: Sequence[Sequence[str]],
                  ids: Sequence[str]) -> int:
    """Index of the data item `requested` names: its id, its topic (rule 6), `<member>:<topic>`."""
    for k, assigned in enumerate(ids):
        if assigned == requested:
            return k
    member, sep, rest = requested.partition(":")
    if sep and not requested.startswith("/"):
        topic = rest if rest.startswith("/") else "/" + rest
        matches = [k for k, t in enumerate(topics) if t == topic and member in member_ids[k]]
    else:
        topic = requested if requested.startswith("/") else "/" + requested
        matches = [k for k, t in enumerate(topics) if t == topic]
    if len(matches) == 1:
        return matches[0]
    raise ItemLookupError(requested, [ids[k] for k in matches])
