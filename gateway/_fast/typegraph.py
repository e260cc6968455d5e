"""Checks of a set of message definitions from the network before anything is built from it.

A node's type description (REP-2011) is data from outside: a type that contains itself
(directly or through others), nests without end, or holds fixed arrays of 10^9 elements
would make a recursive converter overflow the C stack or a default message exhaust memory.
Every consumer (the converter twins, the JSON->CDR encoder, the run-time type build) maps
its parsed definitions to `Member` lists and calls `check_types` once, before building.
The caps are settings (`ros.type_limits.*`), set once at start by `configure`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

SEQUENCE = -1  # Member.array of a bounded or unbounded sequence
SETTING = "ros.type_limits"  # the settings' prefix, named in refusals


@dataclass(frozen=True)
class TypeLimits:
    """Caps on described types; defaults far above any real robot's types."""

    max_depth: int = 64
    max_fixed_elements: int = 1_000_000
    max_read_bytes: int = 256 << 20
    max_encode_bytes: int = 64 << 20
    max_build_bytes: int = 64 << 20
    encode_timeout_s: float = 10.0


LIMITS = TypeLimits()
_KEYS = {"max_depth": "max_depth", "max_fixed_elements": "max_fixed_elements",
         "max_read_bytes": "max_read_bytes", "max_encode_bytes": "max_encode_bytes",
         "max_build_bytes": "max_build_bytes", "encode_timeout_sec": "encode_timeout_s"}


def configure(ros: Any) -> TypeLimits:
    """Take the `ros.type_limits.*` settings (the bridge's RosSettings, fields
    `type_limits_<key>`); the limits."""
    global LIMITS
    LIMITS = replace(TypeLimits(), **{attr: getattr(ros, f"type_limits_{key}")
                                      for key, attr in _KEYS.items()})
    return LIMITS


class TypeLimitError(ValueError):
    """A definition set refused before anything is built from it; says why and which cap."""


class Member(NamedTuple):
    """One field: its nested type (None for a primitive or string), the smallest wire size
    of one element of a primitive, and its array shape (0 scalar, n > 0 fixed, SEQUENCE)."""

    name: str
    nested: str | None
    size: int
    array: int


class _Info(NamedTuple):
    depth: int
    elements: int  # elements of fixed arrays in a default message, nested ones counted
    min_bytes: int  # smallest CDR encoding


def check_types(root: str, types: Mapping[str, Sequence[Member]], max_bytes: int | None = None,
                limits: TypeLimits | None = None) -> None:
    """Refuse (TypeLimitError) a definition set whose `root` type is recursive, nests deeper
    than the cap, holds more fixed-array elements than the cap or cannot be encoded in fewer
    than `max_bytes`. A nested type absent from `types` is an installed one (a leaf)."""
    lim = LIMITS if limits is None else limits
    info: dict[str, _Info] = {}
    # Iterative depth-first walk: no Python or C recursion however the input nests.
    stack: list[tuple[str, int]] = [(root, 0)]
    path: list[str] = []
    on_path: set[str] = set()
    while stack:
        name, state = stack.pop()
        if state == 1:  # every child is done: fold them
            path.pop()
            on_path.discard(name)
            info[name] = _fold(name, types[name], info, lim)
            continue
        if name in info:
            continue
        if name in on_path:
            cycle = path[path.index(name):] + [name]
            raise TypeLimitError(f"type {root} is recursive: {' -> '.join(cycle)} (a ROS "
                                 "message type cannot contain itself)")
        if len(path) >= lim.max_depth:
            raise TypeLimitError(f"type {root} nests deeper than {lim.max_depth} levels "
                                 f"(setting {SETTING}.max_depth)")
        if name not in types:
            info[name] = _Info(1, 0, 1)
            continue
        path.append(name)
        on_path.add(name)
        stack.append((name, 1))
        for m in types[name]:
            if m.nested is not None and m.nested not in info:
                stack.append((m.nested, 0))
    top = info[root]
    if top.depth > lim.max_depth:
        raise TypeLimitError(f"type {root} nests deeper than {lim.max_depth} levels "
                             f"(setting {SETTING}.max_depth)")
    if max_bytes is not None and top.min_bytes > max_bytes:
        raise TypeLimitError(f"type {root}: its smallest message takes {top.min_bytes} bytes, "
                             f"more than {max_bytes} (settings {SETTING}.max_*_bytes)")


def _fold(name: str, members: Sequence[Member], info: Mapping[str, _Info],
          lim: TypeLimits) -> _Info:
    depth, elements, min_bytes = 1, 0, 0 if members else 1  # an empty message: one byte
    for m in members:
        if m.nested is None:
            sub_elements, sub_bytes = 0, max(m.size, 0)
        else:
            sub = info[m.nested]
            depth = max(depth, sub.depth + 1)
            sub_elements, sub_bytes = sub.elements, sub.min_bytes
        if m.array == SEQUENCE:
            min_bytes += 4  # the length; an empty sequence holds no element
        elif m.array > 0:
            elements += m.array * (1 + sub_elements)
            min_bytes += m.array * sub_bytes
        else:
            elements += sub_elements
            min_bytes += sub_bytes
        if elements > lim.max_fixed_elements:
            raise TypeLimitError(
                f"type {name}: more than {lim.max_fixed_elements} fixed-array elements in one "
                f"message (field {m.name}; setting {SETTING}.max_fixed_elements)")
    return _Info(depth, elements, min_bytes)
