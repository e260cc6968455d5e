"""rosbag2 type metadata from the installed interface files: ros2msg text, type hash, QoS YAML.

The schema text is built as rosbag2 builds it: the root `.msg` text verbatim, then each
dependency once, depth-first in sorted order, each introduced by a line of 80 `=` and
`MSG: pkg/Type`. No rclpy needed: `.msg` and `.json` files are found under
`<prefix>/share/<pkg>/msg/` for `sys.prefix` and every `AMENT_PREFIX_PATH` entry.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

PRIMITIVES = frozenset({
    "bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16",
    "int32", "uint32", "int64", "uint64", "string", "wstring",
})
DELIMITER = "=" * 80
# rosbag2 writes an infinite duration as these two numbers.
INFINITE_SEC, INFINITE_NSEC = 9223372036, 854775807
INFINITE_NS = 2**63 - 1


class SchemaError(LookupError):
    """A message type whose interface files are not installed."""


def share_dirs() -> list[Path]:
    """`share` directories searched for interface files, in order."""
    prefixes = [sys.prefix, *os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)]
    out: list[Path] = []
    for prefix in prefixes:
        if prefix:
            share = Path(prefix) / "share"
            if share.is_dir() and share not in out:
                out.append(share)
    return out


def split_type(type_name: str) -> tuple[str, str]:
    """`pkg/msg/Type` or `pkg/Type` -> (pkg, Type)."""
    parts = [p for p in type_name.strip().split("/") if p]
    if len(parts) == 3 and parts[1] == "msg":
        return parts[0], parts[2]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise SchemaError(f"'{type_name}' is not a message type name (pkg/msg/Type)")


def _interface_file(pkg: str, name: str, suffix: str) -> Path | None:
    for share in share_dirs():
        path = share / pkg / "msg" / f"{name}{suffix}"
        if path.is_file():
            return path
    return None


@functools.lru_cache(maxsize=512)
def msg_text(type_name: str) -> str:
    """The `.msg` file of a type, verbatim."""
    pkg, name = split_type(type_name)
    path = _interface_file(pkg, name, ".msg")
    if path is None:
        raise SchemaError(f"no .msg file for '{type_name}' under "
                          f"{', '.join(str(s) for s in share_dirs()) or 'any share directory'}")
    return path.read_text(encoding="utf-8")


def dependencies(pkg: str, text: str) -> set[str]:
    """Message types (`pkg/Type`) that the fields of a `.msg` text use."""
    deps: set[str] = set()
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        token = line.split()[0]
        base = token.split("[", 1)[0].split("<=", 1)[0]
        if base in PRIMITIVES or "=" in base:
            continue
        if "/" in base:
            dep_pkg, dep_name = split_type(base)
            deps.add(f"{dep_pkg}/{dep_name}")
        elif base == "Header":  # legacy shorthand
            deps.add("std_msgs/Header")
        else:
            deps.add(f"{pkg}/{base}")
    return deps


@functools.lru_cache(maxsize=512)
def ros2msg_definition(type_name: str) -> str:
    """The rosbag2 `ros2msg` schema data of a message type."""
    seen: set[str] = set()

    def append(name: str) -> str:
        pkg, _ = split_type(name)
        text = msg_text(name)
        out = text
        for dep in sorted(dependencies(pkg, text)):
            if dep in seen:
                continue
            seen.add(dep)
            out += f"\n{DELIMITER}\nMSG: {dep}\n" + append(dep)
        return out

    return append(type_name)


@functools.lru_cache(maxsize=512)
def type_hash(type_name: str) -> str:
    """The RIHS01 type hash from the installed `.json` type description ('' when absent)."""
    pkg, name = split_type(type_name)
    path = _interface_file(pkg, name, ".json")
    if path is None:
        return ""
    try:
        tree = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    full = f"{pkg}/msg/{name}"
    for entry in tree.get("type_hashes", []):
        if entry.get("type_name") == full:
            return str(entry.get("hash_string", ""))
    return ""


def full_type(type_name: str) -> str:
    """`pkg/msg/Type` for `pkg/Type` or `pkg/msg/Type`."""
    pkg, name = split_type(type_name)
    return f"{pkg}/msg/{name}"


# QoS ------------------------------------------------------------------------------------------
def _duration(ns: int) -> dict[str, int]:
    if ns <= 0 or ns >= INFINITE_NS:
        return {"sec": INFINITE_SEC, "nsec": INFINITE_NSEC}
    return {"sec": ns // 1_000_000_000, "nsec": ns % 1_000_000_000}


def qos_profile(history: str = "unknown", depth: int = 0, reliability: str = "reliable",
                durability: str = "volatile", deadline_ns: int = INFINITE_NS,
                lifespan_ns: int = INFINITE_NS, liveliness: str = "automatic",
                lease_ns: int = INFINITE_NS, avoid_ros_namespace_conventions: bool = False
                ) -> dict[str, Any]:
    """One offered QoS profile in rosbag2's metadata form (enum names lower case)."""
    return {
        "history": history.lower(),
        "depth": int(depth),
        "reliability": reliability.lower(),
        "durability": durability.lower(),
        "deadline": _duration(deadline_ns),
        "lifespan": _duration(lifespan_ns),
        "liveliness": liveliness.lower(),
        "liveliness_lease_duration": _duration(lease_ns),
        "avoid_ros_namespace_conventions": bool(avoid_ros_namespace_conventions),
    }


def qos_yaml(profiles: Iterable[Mapping[str, Any]]) -> str:
    """The YAML text rosbag2 stores as `offered_qos_profiles` (MCAP channel, sqlite3 topic)."""
    items = [dict(p) for p in profiles]
    if not items:
        return ""
    return yaml.safe_dump(items, sort_keys=False, default_flow_style=False)
