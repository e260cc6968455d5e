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


# More ranges than this (after merging) are not worth a multipart body: the whole file is sent.
MAX_RANGES = 16
# Bytes a multipart part costs beyond its data (boundary line, two headers), a generous bound.
PART_OVERHEAD = 160


def coalesce(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Inclusive (start, end) pairs sorted, with overlapping and adjacent ones merged."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1] + 1:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def plan(ranges: list[tuple[int | None, int | None]], size: int,
         ctype_len: int = 64) -> list[tuple[int, int]] | None:
    """Spans to serve for a Range: [] unsatisfiable (416), None the whole file (200).

    Overlapping and adjacent ranges are merged; more than MAX_RANGES, or ranges whose
    answer would cost more bytes than the file itself, are answered with the whole file,
    so no request makes the gateway send much more than one file's size.
    """
    spans = coalesce(resolve(ranges, size))
    if not spans:
        return []
    if spans == [(0, size - 1)]:
        return None  # the whole file: a plain 200
    if len(spans) == 1:
        return spans
    cost = sum(e - s + 1 + PART_OVERHEAD + ctype_len for s, e in spans)
    if len(spans) > MAX_RANGES or cost >= size:
        return None
    return spans
