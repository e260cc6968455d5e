"""The "did you mean" of an unknown dotted key (settings, manifest keys): pure logic."""

from __future__ import annotations

from collections.abc import Iterable

CUTOFF = 0.6


def _tail(key: str, parts: int) -> str:
    return ".".join(key.split(".")[-parts:])


def closest_key(key: str, candidates: Iterable[str], cutoff: float = CUTOFF) -> str | None:
    """The candidate a misspelt `key` most likely means, or None.

    A key given without its leading section (`rosbag.enabled` for `snapshots.rosbag.enabled`)
    is matched on the candidate's last dotted parts too: an exact suffix wins, then the best
    of whole-key and last-parts similarity (ties go to the whole key, then to the shorter)."""
    import difflib  # noqa: PLC0415 - only when a key is unknown: not at every start

    names = sorted(set(candidates))
    if not key or not names:
        return None
    suffix = [c for c in names if c.endswith("." + key)]
    if suffix:
        return min(suffix, key=lambda c: (len(c), c))
    parts = key.count(".") + 1
    best: tuple[float, float, int, str] | None = None
    for cand in names:
        whole = difflib.SequenceMatcher(None, key, cand).ratio()
        tail = _tail(cand, parts)
        last = difflib.SequenceMatcher(None, key, tail).ratio() if tail != cand else 0.0
        score = max(whole, last)
        if score < cutoff:
            continue
        rank = (score, whole, -len(cand), cand)
        if best is None or rank[:3] > best[:3]:
            best = rank
    return best[3] if best is not None else None
