"""Timestamps as the API writes them."""

from __future__ import annotations

import datetime as _dt


def iso(ns: int) -> str:
    """ISO 8601 UTC with millisecond precision from epoch nanoseconds."""
    t = _dt.datetime.fromtimestamp(ns / 1e9, tz=_dt.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"
