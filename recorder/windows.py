"""Recording windows (pure): which confirming faults share a recording, and when it closes.

A fault confirming at `t` opens a window [t - duration, t + duration_after] unless an open
window still runs at `t` and has room: then it is attached to that window's recording
(at most MAX_ATTACHED faults beyond the first). Attaching does not move the window's end.
"""

from __future__ import annotations

import datetime as _dt
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

MAX_ATTACHED = 32  # spec Limits: faults attached per open rosbag window beyond the first


def new_recording_id(now_ns: int, token: str | None = None, prefix: str = "rec") -> str:
    """`<prefix>_<UTC yyyymmddTHHMMSSmmm>Z_<6 hex>`: sortable by time, unique, path-safe."""
    t = _dt.datetime.fromtimestamp(now_ns / 1e9, tz=_dt.timezone.utc)
    stamp = t.strftime("%Y%m%dT%H%M%S") + f"{t.microsecond // 1000:03d}Z"
    return f"{prefix}_{stamp}_{token or secrets.token_hex(3)}"


@dataclass
class Window:
    """One recording being collected: its faults, topics and the pre-fault messages."""

    recording_id: str
    trigger_ns: int
    start_ns: int
    end_ns: int
    codes: list[str] = field(default_factory=list)
    sources: dict[str, list[str]] = field(default_factory=dict)
    topics: set[str] = field(default_factory=set)
    all_topics: bool = False  # keep every buffered topic (topic_selection: all)
    pre: list[Any] = field(default_factory=list)  # buffer entries taken at the trigger
    pre_seq: int = 0  # last buffer sequence number in `pre`

    @property
    def full(self) -> bool:
        """No room for another fault."""
        return len(self.codes) >= 1 + MAX_ATTACHED

    def attach(self, code: str, sources: Iterable[str]) -> None:
        """Add a fault (sources merged when it is already attached)."""
        if code not in self.codes:
            self.codes.append(code)
        merged = self.sources.setdefault(code, [])
        for s in sources:
            if s not in merged:
                merged.append(s)


class Windows:
    """The open windows, newest last."""

    def __init__(self, duration_ns: int, after_ns: int,
                 new_id: Callable[[int], str] = new_recording_id) -> None:
        self.duration_ns = duration_ns
        self.after_ns = after_ns
        self.new_id = new_id
        self.open: list[Window] = []

    def on_confirm(self, code: str, sources: Iterable[str], now_ns: int
                   ) -> tuple[Window, bool]:
        """The window a fault confirming now belongs to; True when it was opened for it."""
        sources = list(sources)
        for w in self.open:
            if code in w.codes and now_ns <= w.end_ns:
                w.attach(code, sources)
                return w, False
        for w in reversed(self.open):
            if now_ns <= w.end_ns and not w.full:
                w.attach(code, sources)
                return w, False
        w = Window(self.new_id(now_ns), now_ns, now_ns - self.duration_ns,
                   now_ns + self.after_ns)
        w.attach(code, sources)
        self.open.append(w)
        return w, True

    def due(self, now_ns: int) -> list[Window]:
        """Remove and return the windows whose end has passed."""
        done = [w for w in self.open if w.end_ns <= now_ns]
        if done:
            self.open = [w for w in self.open if w.end_ns > now_ns]
        return done

    def detach(self, code: str) -> list[Window]:
        """Take a fault off every open window; returns the windows left empty (removed)."""
        emptied = []
        for w in self.open:
            if code in w.codes:
                w.codes.remove(code)
                w.sources.pop(code, None)
                if not w.codes:
                    emptied.append(w)
        if emptied:
            self.open = [w for w in self.open if w.codes]
        return emptied

    def close_all(self) -> list[Window]:
        """Remove and return every open window (shutdown)."""
        done, self.open = self.open, []
        return done

    def next_end(self) -> int | None:
        """The earliest end among open windows."""
        return min((w.end_ns for w in self.open), default=None)
