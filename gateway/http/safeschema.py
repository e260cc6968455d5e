"""JSON Schemas from clients and files, checked and applied without ever fetching anything.

jsonschema resolves a `$ref` it does not know by downloading it (a blocking `urlopen`, no
timeout): a schema could make the gateway fetch any URL or read `file:///etc/passwd`. Here only
local refs (`#`, `#/...`) are accepted, the registry never retrieves, and schema and instance
are bounded in size and depth. Regexes (`pattern`, `patternProperties`) match on RE2, in linear
time (`safepattern.py`). Validation runs on a small pool of its own, off the event loop, with a
time budget.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from . import safepattern

MAX_SCHEMA_BYTES = 65536  # serialized schema
MAX_DEPTH = 32  # nesting of objects and arrays, in a schema and in an instance
MAX_INSTANCE_BYTES = 1 << 20  # serialized instance
VALIDATE_TIMEOUT_S = 5.0
_REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")
_ID_KEYS = ("$id", "id")
_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="schema-validate")


class SchemaRefused(ValueError):
    """A schema that cannot be used; the message names the place and the reason."""


def _depth_ok(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            if depth > limit:
                return False
            children = node.values() if isinstance(node, dict) else node
            stack.extend((c, depth + 1) for c in children)
    return True


def _walk(node: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object of a schema with its JSON pointer."""
    if isinstance(node, dict):
        yield path or "/", node
        for key, child in node.items():
            yield from _walk(child, f"{path}/{key}")
    elif isinstance(node, list):
        for n, child in enumerate(node):
            yield from _walk(child, f"{path}/{n}")


def _pointer(schema: Any, ref: str) -> bool:
    """Whether a local ref (`#` or `#/a/b`) names a part of the schema."""
    fragment = ref[1:]
    if fragment == "":
        return True
    if not fragment.startswith("/"):
        return False  # an anchor name (`#foo`): not supported
    node = schema
    for raw in fragment[1:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    return True


def check(schema: Any, what: str = "parameters_schema") -> dict[str, Any]:
    """A usable schema, or SchemaRefused: only local refs that resolve, bounded, well formed."""
    import jsonschema

    if not isinstance(schema, dict):
        raise SchemaRefused(f"{what} must be a JSON Schema object")
    try:
        size = len(json.dumps(schema))
    except (TypeError, ValueError):
        raise SchemaRefused(f"{what} holds values that are not JSON") from None
    if size > MAX_SCHEMA_BYTES:
        raise SchemaRefused(f"{what} is {size} bytes; at most {MAX_SCHEMA_BYTES}")
    if not _depth_ok(schema, MAX_DEPTH):
        raise SchemaRefused(f"{what} is nested deeper than {MAX_DEPTH} levels")
    for where, node in _walk(schema):
        for key in _REF_KEYS:
            ref = node.get(key)
            if ref is None:
                continue
            if not isinstance(ref, str) or not ref.startswith("#"):
                raise SchemaRefused(
                    f"{what}: {key} {ref!r} at {where} is not a local reference; only refs "
                    "into the schema itself ('#/...') are allowed, nothing is fetched")
            if not _pointer(schema, ref):
                raise SchemaRefused(f"{what}: {key} {ref!r} at {where} names no part of the "
                                    "schema")
        if where != "/" and any(isinstance(node.get(k), str) for k in _ID_KEYS):
            raise SchemaRefused(f"{what}: an $id at {where} is not allowed (refs resolve "
                                "within the schema only)")
        _check_patterns(node, where, what)
    keys = {k for _, node in _walk(schema) for k in node}
    if {"patternProperties", "unevaluatedProperties"} <= keys:
        # jsonschema finds the evaluated names with Python's backtracking `re`: out of reach
        raise SchemaRefused(f"{what}: patternProperties cannot be combined with "
                            "unevaluatedProperties; use additionalProperties")
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise SchemaRefused(f"{what} is not a valid JSON Schema: {exc.message}") from None
    except RecursionError:
        raise SchemaRefused(f"{what} is nested too deeply") from None
    return schema


def _check_patterns(node: dict[str, Any], where: str, what: str) -> None:
    for pattern in safepattern.patterns_of(node):
        try:
            safepattern.compiled(pattern)
        except safepattern.PatternRefused as exc:
            raise SchemaRefused(f"{what}: pattern {pattern!r} at {where} is refused: {exc}") \
                from None


def validator(schema: dict[str, Any]) -> Any:
    """A jsonschema validator whose registry holds nothing and retrieves nothing, whose
    regexes match on RE2."""
    import jsonschema
    from referencing import Registry

    cls = safepattern.on_re2(jsonschema.validators.validator_for(schema))
    return cls(schema, registry=Registry())


def problems(schema: dict[str, Any] | None, instance: Any) -> list[str]:
    """Problems of instance against schema (empty: valid); never fetches, never raises."""
    if schema is None:
        return []
    try:
        size = len(json.dumps(instance, ensure_ascii=False).encode("utf-8"))
    except UnicodeError:  # a lone surrogate: RE2 matches UTF-8, which cannot hold it
        return ["(root): strings must be valid Unicode (a lone surrogate is not)"]
    except (TypeError, ValueError):
        return ["(root): not JSON"]
    if size > MAX_INSTANCE_BYTES:
        return [f"(root): {size} bytes; at most {MAX_INSTANCE_BYTES}"]
    if not _depth_ok(instance, MAX_DEPTH):
        return [f"(root): nested deeper than {MAX_DEPTH} levels"]
    from referencing.exceptions import Unresolvable

    out: list[str] = []
    try:
        errors = sorted(validator(schema).iter_errors(instance),
                        key=lambda e: [str(p) for p in e.absolute_path])
        for err in errors:
            where = "/".join(str(p) for p in err.absolute_path)
            out.append(f"{where or '(root)'}: {err.message}")
    except Unresolvable as exc:
        out.append(f"(schema): reference {getattr(exc, 'ref', '')!r} does not resolve; "
                   "nothing is fetched")
    except RecursionError:
        out.append("(schema): references loop without end")
    except safepattern.PatternRefused as exc:  # a schema that never went through check()
        out.append(f"(schema): a pattern is refused: {exc}")
    return out


async def problems_off_loop(schema: dict[str, Any] | None, instance: Any,
                            timeout_s: float = VALIDATE_TIMEOUT_S) -> list[str]:
    """problems() on the validation pool; a run past timeout_s is reported as a problem."""
    if schema is None:
        return []
    future = asyncio.get_running_loop().run_in_executor(_POOL, problems, schema, instance)
    try:
        return await asyncio.wait_for(future, timeout_s)
    except asyncio.TimeoutError:
        return [f"(schema): validation took longer than {timeout_s:g} s; simplify the schema "
                "(patterns) or the parameters"]
