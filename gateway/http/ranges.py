"""HTTP Range header parsing (RFC 9110 byte ranges)."""

from __future__ import annotations

import re

_SPEC = re.compile(r"^\s*(\d*)\s*-\s*(\d*)\s*$")


class RangeError(ValueError):
    """A Range header that cannot be parsed."""


def parse_range(header: str) -> list[tuple[int | None, int | None]]:
    """`bytes=a-b, c-, -n` -> [(a, b), (c, None), (None, n)]; RangeError when unparseable."""
    unit, sep, specs = header.partition("=")
    if not sep or unit.strip().lower() != "bytes":
        raise RangeError(f"Range {header!r}: only 'bytes=' ranges are supported")
    out: list[tuple[int | None, int | None]] = []
    for spec in specs.split(","):
        m = _SPEC.match(spec)
        if not m or (not m.group(1) and not m.group(2)):
            raise RangeError(f"Range {header!r}: cannot parse {spec.strip()!r}")
        first = int(m.group(1)) if m.group(1) else None
        last = int(m.group(2)) if m.group(2) else None
        if first is not None and last is not None and last < first:
            raise RangeError(f"Range {header!r}: {first}-{last} ends before it starts")
        out.append((first, last))
    return out


def resolve(ranges: list[tuple[int | None, int | None]], size: int) -> list[tuple[int, int]]:
    """Byte ranges against a size -> inclusive (start, end) pairs that are satisfiable."""
    out = []
    for first, last in ranges:
        if first is None:
            assert last is not None
            if last == 0:
                continue
            start, end = max(0, size - last), size - 1
        else:
            start, end = first, size - 1 if last is None else min(last, size - 1)
        if start < size and start <= end:
            out.append((start, end))
    return out
