"""Triggers and subscriptions whose entity left discovery: a grace period, then the end (pure)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

Key = tuple[str, str]  # (entity type, entity id)


class OrphanClock:
    """Remembers which entities were seen and since when a seen entity has been missing.

    Only an entity seen at least once can become an orphan (a restored trigger may wait for
    its entity); one that comes back within the grace period keeps its owners.
    """

    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self.seen: set[Key] = set()
        self.missing_since: dict[Key, float] = {}

    def saw(self, key: Key) -> None:
        """The entity exists now (an owner was just created on it)."""
        self.seen.add(key)
        self.missing_since.pop(key, None)

    def orphans(self, keys: Iterable[Key], present: Callable[[str, str], bool],
                now: float) -> set[Key]:
        """Of the entities owners are on, those missing for at least the grace period."""
        out: set[Key] = set()
        wanted = set(keys)
        for key in wanted:
            if present(*key):
                self.seen.add(key)
                self.missing_since.pop(key, None)
                continue
            if key not in self.seen:
                continue
            since = self.missing_since.setdefault(key, now)
            if now - since >= self.grace_s:
                out.add(key)
        for key in [k for k in self.seen if k not in wanted]:  # nobody left on it
            self.seen.discard(key)
            self.missing_since.pop(key, None)
        for key in out:
            self.seen.discard(key)
            self.missing_since.pop(key, None)
        return out
