"""Interface packages built at run time from the type descriptions nodes serve (REP-2011).

A service type's description cannot be asked for by name: a Jazzy node answers
`~/get_type_description` only for a type *hash*, and the graph carries the hashes of the
request and response messages, never the service's. A server with service introspection
enabled publishes `<service>/_service_event` (`pkg/srv/X_Event`, whose hash the graph does
carry); that description holds the full request and response structures. From it the
gateway writes `.msg`/`.srv` sources (every name and type checked against the rosidl
grammar here: the data came from the network), builds them in a subprocess
(`_typebuild_worker.py`: rosidl generators and gcc, bounded in time) into
`<state_dir>/types/<key>/`, an install prefix that `interface_paths.serve()` adds. The
cache is keyed by the sources, so a restart reuses a build.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..._fast import typegraph
from ..._fast.typegraph import SEQUENCE, Member, TypeLimitError, check_types

# FieldType ids (type_description_interfaces/msg/FieldType): base ids and their .msg names.
_BASIC = {2: "int8", 3: "uint8", 4: "int16", 5: "uint16", 6: "int32", 7: "uint32",
          8: "int64", 9: "uint64", 10: "float32", 11: "float64", 13: "char", 15: "bool",
          16: "byte", 17: "string", 18: "wstring", 19: "string", 20: "wstring",
          21: "string", 22: "wstring"}
_NESTED, _ARRAY, _BOUNDED, _UNBOUNDED = 1, 48, 96, 144
_STRING_BOUNDED = {19, 20, 21, 22}
# Names are checked whole (fullmatch, ASCII only): no trailing newline or other text passes.
_PKG_RE = re.compile(r"[a-z](?:[a-z0-9]|_(?!_))*(?<!_)", re.ASCII)
_TYPE_RE = re.compile(r"[A-Z][A-Za-z0-9]*(?:_[A-Z][A-Za-z0-9]*)*", re.ASCII)  # X, X_Request
_FIELD_RE = re.compile(r"[a-z](?:[a-z0-9]|_(?!_))*(?<!_)", re.ASCII)
_NUMBER_RE = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", re.ASCII)
# String defaults kept: no quote, backslash, comment or control character can reach a file.
_PLAIN_TEXT_RE = re.compile(r"[A-Za-z0-9 _.,:/+!?@%=()<>&^~|;-]*", re.ASCII)
_HASH_RE = re.compile(r"RIHS01_[0-9a-f]{64}", re.ASCII)
# Smallest CDR size of one element per base type id (strings: their 4-byte length).
_BASE_SIZE = {2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 4, 8: 8, 9: 8, 10: 4, 11: 8, 13: 1, 15: 1,
              16: 1, 17: 4, 18: 4, 19: 4, 20: 4, 21: 4, 22: 4}
MAX_TYPES = 64
MAX_FIELDS = 256
MAX_BOUND = 1 << 24
EMPTY_MEMBER = "structure_needs_at_least_one_member"


class BuildError(ValueError):
    """A description that cannot (or may not) become an interface package."""


@dataclass(frozen=True)
class Field:
    """One field of an individual type description."""

    name: str
    type_id: int
    capacity: int
    string_capacity: int
    nested: str
    default: str


def split_type(name: str) -> tuple[str, str, str]:
    """(package, kind, Type) of `pkg/kind/Type`, each checked against the ROS naming rules."""
    parts = name.split("/") if isinstance(name, str) else []
    if len(parts) != 3 or parts[1] not in ("msg", "srv", "action"):
        raise BuildError(f"not an interface type name: {name!r}")
    pkg, kind, base = parts
    if not _PKG_RE.fullmatch(pkg) or len(pkg) > 64:
        raise BuildError(f"invalid package name in {name!r}")
    if not _TYPE_RE.fullmatch(base) or len(base) > 128:
        raise BuildError(f"invalid type name in {name!r}")
    return pkg, kind, base


def _default(field: Field, base: str) -> str:
    """The field's default as .msg text, or "" when it is not a plain literal: defaults are
    not part of the type hash nor of the wire format, so one left out changes only what an
    absent field of a request holds (its zero value)."""
    value = field.default.strip()
    if not value:
        return ""
    if field.type_id >= _ARRAY:  # the description holds a Python tuple: (1, 2) or (True,)
        if value[0] + value[-1] not in ("()", "[]") or base in ("string", "wstring"):
            return ""
        items = [i.strip() for i in value[1:-1].split(",") if i.strip()]
        rendered = [_scalar(i, base) for i in items]
        return "" if not items or "" in rendered else " [" + ", ".join(rendered) + "]"
    scalar = _scalar(value, base)
    return " " + scalar if scalar else ""


def _scalar(value: str, base: str) -> str:
    """One plain default value as .msg text ("" when it is not one)."""
    if base in ("string", "wstring"):
        return f'"{value}"' if _PLAIN_TEXT_RE.fullmatch(value) else ""
    if base == "bool":
        return {"true": "true", "false": "false", "1": "true", "0": "false"}.get(
            value.lower(), "")
    return value if _NUMBER_RE.fullmatch(value) else ""


def field_line(field: Field) -> str:
    """One `.msg` line (`type[bound] name [default]`) for a described field."""
    if not _FIELD_RE.fullmatch(field.name) or len(field.name) > 128:
        raise BuildError(f"invalid field name {field.name!r}")
    tid = field.type_id
    group = (tid // _ARRAY) * _ARRAY if tid >= _ARRAY else 0
    base_id = tid - group
    if group not in (0, _ARRAY, _BOUNDED, _UNBOUNDED):
        raise BuildError(f"field {field.name}: unknown type id {tid}")
    if base_id == _NESTED:
        pkg, kind, name = split_type(field.nested)
        if kind != "msg":
            raise BuildError(f"field {field.name}: nested type {field.nested!r} is not a msg")
        base = f"{pkg}/{name}"
    elif base_id in _BASIC:
        base = _BASIC[base_id]
    else:
        raise BuildError(f"field {field.name}: type id {tid} has no .msg form")
    if base_id in _STRING_BOUNDED:
        if not 0 < field.string_capacity <= MAX_BOUND:
            raise BuildError(f"field {field.name}: string bound {field.string_capacity}")
        base += f"<={field.string_capacity}"
    if group in (_ARRAY, _BOUNDED) and not 0 < field.capacity <= MAX_BOUND:
        raise BuildError(f"field {field.name}: capacity {field.capacity}")
    suffix = {0: "", _ARRAY: f"[{field.capacity}]", _BOUNDED: f"[<={field.capacity}]",
              _UNBOUNDED: "[]"}[group]
    return f"{base}{suffix} {field.name}{_default(field, base)}"


def msg_body(fields: list[Field]) -> str:
    """The `.msg` text of a described type's fields (each checked by field_line)."""
    if len(fields) > MAX_FIELDS:
        raise BuildError(f"more than {MAX_FIELDS} fields")
    if [f.name for f in fields] == [EMPTY_MEMBER]:
        return ""  # the IDL placeholder of an empty structure
    return "".join(field_line(f) + "\n" for f in fields)


@dataclass
class BuildSpec:
    """What the worker builds: sources per package, their dependencies, hashes to match."""

    packages: dict[str, dict[str, Any]]
    expect: dict[str, str]

    def key(self) -> str:
        """The cache key: a digest of everything the build depends on."""
        blob = json.dumps({"p": self.packages, "e": self.expect}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:24]

    def as_json(self) -> dict[str, Any]:
        """The worker's input."""
        return {"packages": self.packages, "expect": self.expect}


def service_spec(event_types: list[str], types: dict[str, list[Field]],
                 have: Callable[[str], bool], expect: dict[str, str]) -> BuildSpec:
    """The build of the services `pkg/srv/X` whose `pkg/srv/X_Event` descriptions (with every
    referenced type) are in `types`; `have(pkg)` tells the gateway's own packages (kept)."""
    if len(types) > MAX_TYPES:
        raise BuildError(f"more than {MAX_TYPES} referenced types")
    packages: dict[str, dict[str, Any]] = {}
    deps: dict[str, set[str]] = {}

    def entry(p: str) -> dict[str, Any]:
        return packages.setdefault(p, {"sources": {"msg": {}, "srv": {}}, "deps": []})

    def uses(p: str, fields: list[Field]) -> None:
        for f in fields:
            if f.type_id % _ARRAY == _NESTED:
                dep = split_type(f.nested)[0]
                if dep != p:
                    deps.setdefault(p, set()).add(dep)

    for event_type in event_types:
        pkg, kind, event = split_type(event_type)
        if kind != "srv" or not event.endswith("_Event"):
            raise BuildError(f"{event_type} is not a service event type")
        service = event[: -len("_Event")]
        request = types.get(f"{pkg}/srv/{service}_Request")
        response = types.get(f"{pkg}/srv/{service}_Response")
        if request is None or response is None:
            raise BuildError(f"the description of {event_type} lacks the request or response")
        if have(pkg):
            raise BuildError(f"{pkg}/srv/{service}: the gateway's own package {pkg} lacks it")
        entry(pkg)["sources"]["srv"][service] = msg_body(request) + "---\n" + msg_body(response)
        uses(pkg, request + response)
        deps.setdefault(pkg, set()).add("service_msgs")  # the generated X_Event uses it
    for name, fields in types.items():
        tpkg, tkind, tname = split_type(name)
        if tkind != "msg" or have(tpkg):
            continue  # service parts are generated from the .srv; own packages serve theirs
        entry(tpkg)["sources"]["msg"][tname] = msg_body(fields)
        uses(tpkg, fields)
    order = _dependency_order(set(packages), deps)
    check_limits(types, typegraph.LIMITS.max_build_bytes)
    for p in packages:
        packages[p]["deps"] = sorted(deps.get(p, set()))
    return BuildSpec({p: packages[p] for p in order}, dict(sorted(expect.items())))


def _dependency_order(built: set[str], deps: dict[str, set[str]]) -> list[str]:
    order: list[str] = []
    pending = set(built)
    while pending:
        ready = sorted(p for p in pending if not (deps.get(p, set()) & pending))
        if not ready:
            raise BuildError(f"packages depend on each other: {', '.join(sorted(pending))}")
        order += ready
        pending -= set(ready)
    return order


def fields_of(description: Any) -> list[Field]:
    """Fields of a type_description_interfaces IndividualTypeDescription."""
    return [Field(f.name, int(f.type.type_id), int(f.type.capacity),
                  int(f.type.string_capacity), f.type.nested_type_name, f.default_value)
            for f in description.fields]


def check_limits(types: dict[str, list[Field]], max_bytes: int | None = None) -> None:
    """Refuse (BuildError) described types that are recursive or past the ros.type_limits caps
    (nesting depth, fixed-array elements of a default message, smallest size `max_bytes`)."""
    members: dict[str, list[Member]] = {}
    for name, fields in types.items():
        out = []
        for f in fields:
            group = (f.type_id // _ARRAY) * _ARRAY if f.type_id >= _ARRAY else 0
            base_id = f.type_id - group
            nested = f.nested if base_id == _NESTED else None
            array = {0: 0, _ARRAY: max(f.capacity, 1)}.get(group, SEQUENCE)
            out.append(Member(f.name, nested, _BASE_SIZE.get(base_id, 1), array))
        members[name] = out
    try:
        for name in sorted(types):
            check_types(name, members, max_bytes)
    except TypeLimitError as exc:
        raise BuildError(str(exc)) from None


def description_types(description: Any) -> dict[str, list[Field]]:
    """Fields of a type_description_interfaces TypeDescription's type and referenced types."""
    td = description.type_description
    types = {td.type_name: fields_of(td)}
    for ref in description.referenced_type_descriptions:
        types.setdefault(ref.type_name, fields_of(ref))
    return types


def description_hash(description: Any) -> str:
    """The RIHS01 hash (REP-2011) of a type_description_interfaces TypeDescription: sha256 of
    its canonical JSON, default values left out (rosidl_generator_type_description's form)."""

    def individual(itd: Any) -> dict[str, Any]:
        return {"type_name": itd.type_name, "fields": [
            {"name": f.name, "type": {"type_id": int(f.type.type_id),
                                      "capacity": int(f.type.capacity),
                                      "string_capacity": int(f.type.string_capacity),
                                      "nested_type_name": f.type.nested_type_name}}
            for f in itd.fields]}

    blob = {"type_description": individual(description.type_description),
            "referenced_type_descriptions": [
                individual(r) for r in description.referenced_type_descriptions]}
    text = json.dumps(blob, ensure_ascii=True, allow_nan=False, indent=None,
                      separators=(", ", ": "), sort_keys=False)
    return "RIHS01_" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_hash(description: Any, announced: str) -> None:
    """Refuse (BuildError) a TypeDescription whose RIHS01 hash is not the one the graph
    announced for the type; a hash of another RIHS version cannot be computed: not checked."""
    if not announced.startswith("RIHS01_"):
        return
    name = description.type_description.type_name
    computed = description_hash(description)
    if not _HASH_RE.fullmatch(announced) or computed != announced:
        raise BuildError(f"the description of {name} does not match its type hash: the graph "
                         f"announces {announced}, the description hashes to {computed}")
