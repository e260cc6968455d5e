"""A recording's summary read on the gateway: topics, time range, messages around the fault.

Only where the tools run inside the gateway that holds the bag (never a download): the index
entry, and for MCAP the file's summary section plus a bounded scan of the seconds around the
fault. Blocking reads: call `summarize` from a thread.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

MAX_SCANNED = 20_000  # messages read around the fault at most
MAX_TOPICS = 50


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).isoformat(timespec="milliseconds")


def _mcap_part(path: Path, fault_ns: int, around_s: float) -> dict[str, Any]:
    from mcap.reader import make_reader  # noqa: PLC0415 - mcap only for a recording summary

    out: dict[str, Any] = {}
    with path.open("rb") as stream:
        reader = make_reader(stream)
        summary = reader.get_summary()
        if summary is not None:
            stats = summary.statistics
            topics = {ch.id: ch.topic for ch in summary.channels.values()}
            types = {ch.topic: summary.schemas[ch.schema_id].name
                     for ch in summary.channels.values() if ch.schema_id in summary.schemas}
            counts = dict(stats.channel_message_counts) if stats is not None else {}
            out["topics"] = [{"topic": topics[cid], "type": types.get(topics[cid]),
                              "messages": counts.get(cid, 0)}
                             for cid in sorted(topics, key=lambda c: topics[c])][:MAX_TOPICS]
            if stats is not None and stats.message_count:
                out["message_count"] = stats.message_count
                out["time_range"] = {"start": _iso(stats.message_start_time),
                                     "end": _iso(stats.message_end_time)}
        window = int(around_s * 1e9)
        before: Counter[str] = Counter()
        after: Counter[str] = Counter()
        last: dict[str, str] = {}
        scanned = 0
        for _schema, channel, message in reader.iter_messages(
                start_time=fault_ns - window, end_time=fault_ns + window):
            (before if message.log_time < fault_ns else after)[channel.topic] += 1
            last[channel.topic] = _iso(message.log_time)
            scanned += 1
            if scanned >= MAX_SCANNED:
                out["around_fault_truncated"] = True
                break
        out["around_fault"] = {
            "window_sec": around_s, "fault_time": _iso(fault_ns),
            "topics": [{"topic": t, "before": before[t], "after": after[t], "last": last[t]}
                       for t in sorted(set(before) | set(after))][:MAX_TOPICS]}
    return out


def summarize(recorder: Any, rec_id: str, around_s: float) -> dict[str, Any] | None:
    """The local summary of recording `rec_id`, or None when this gateway does not hold it."""
    rec = recorder.index.recordings.get(rec_id) if recorder is not None else None
    if rec is None:
        return None
    out: dict[str, Any] = {
        "window": {"start": _iso(rec.start_ns), "end": _iso(rec.end_ns),
                   "fault_confirmed": _iso(rec.created_ns)},
        "message_count": rec.message_count, "sources": rec.sources,
        "topics": [{"topic": t} for t in rec.topics[:MAX_TOPICS]],
    }
    path = recorder.index.file_of(rec)
    if rec.format == "mcap" and path.is_file():
        try:
            out.update(_mcap_part(path, rec.created_ns, around_s))
        except Exception as exc:  # a damaged bag: the index entry still answers
            out["read_error"] = f"{type(exc).__name__}: {exc}"[:300]
    return out
