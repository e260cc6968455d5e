"""JSON Schemas from clients and files, checked and applied without ever fetching anything.

jsonschema resolves a `$ref` it does not know by downloading it (a blocking `urlopen`, no
timeout): a schema could make the gateway fetch any URL or read `file:///etc/passwd`. Here only
local refs (`#`, `#/...`) are accepted, the registry never retrieves, and schema and instance
are bounded in size, depth and expansion (nested `$ref`, `allOf`, `anyOf`... multiply the
work). Regexes (`pattern`, `patternProperties`) match on RE2, in linear time (`safepattern.py`).
Validation runs in worker processes killed at their time budget (`schema_worker.py`).
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterator
from typing import Any

from . import safepattern, schema_worker

MAX_SCHEMA_BYTES = 65536  # serialized schema
MAX_DEPTH = 32  # nesting of objects and arrays, in a schema and in an instance
MAX_INSTANCE_BYTES = 1 << 20  # serialized instance
# Subschemas one instance value may meet, refs followed: nested refs under allOf/anyOf/oneOf
# double it at each level (30 levels: a billion). A 64 KiB schema holds some thousands.
MAX_EXPANSION = 10000
MAX_PROBLEMS = 100  # problems reported of one validation
MAX_PROBLEM_CHARS = 1000  # of one problem (a message may quote the whole value)
VALIDATE_TIMEOUT_S = 5.0
_REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")
_ID_KEYS = ("$id", "id")
# keywords whose value is a subschema, a list of them, or a map of them (all drafts)
_ONE = ("additionalProperties", "unevaluatedProperties", "items", "additionalItems",
        "unevaluatedItems", "contains", "propertyNames", "if", "then", "else", "not",
        "contentSchema")
_MANY = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_MAP = ("properties", "patternProperties", "dependentSchemas", "dependencies")


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


_MISSING = object()


def _target(schema: Any, ref: str) -> Any:
    """The part of the schema a local ref (`#` or `#/a/b`) names, else _MISSING."""
    fragment = ref[1:]
    if fragment == "":
        return schema
    if not fragment.startswith("/"):
        return _MISSING  # an anchor name (`#foo`): not supported
    node = schema
    for raw in fragment[1:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def _pointer(schema: Any, ref: str) -> bool:
    """Whether a local ref (`#` or `#/a/b`) names a part of the schema."""
    return _target(schema, ref) is not _MISSING


def _applied(schema: dict[str, Any], node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The subschemas node applies to a value (or to its members), refs resolved."""
    for key in _REF_KEYS:
        ref = node.get(key)
        if isinstance(ref, str) and ref.startswith("#"):
            target = _target(schema, ref)
            if isinstance(target, dict):
                yield target
    for key in _ONE:
        if isinstance(node.get(key), dict):
            yield node[key]
    for key in _MANY:
        if isinstance(node.get(key), list):
            yield from (c for c in node[key] if isinstance(c, dict))
    for key in _MAP:
        if isinstance(node.get(key), dict):
            yield from (c for c in node[key].values() if isinstance(c, dict))


def expansion(schema: dict[str, Any], limit: int = MAX_EXPANSION) -> int:
    """How many subschemas the schema unfolds to with every ref followed (a ref back into its
    own chain counts once: it recurses with the value); stops counting past limit."""
    done: dict[int, int] = {}
    active = {id(schema)}
    stack: list[tuple[dict[str, Any], Iterator[dict[str, Any]], list[int]]] = [
        (schema, _applied(schema, schema), [1])]
    while stack:
        node, children, total = stack[-1]
        for child in children:
            key = id(child)
            if key in done or key in active:
                total[0] += done.get(key, 1)
                if total[0] > limit:
                    return total[0]
                continue
            active.add(key)
            stack.append((child, _applied(schema, child), [1]))
            break
        else:
            stack.pop()
            active.discard(id(node))
            done[id(node)] = total[0]
            if stack:
                stack[-1][2][0] += total[0]
                if stack[-1][2][0] > limit:
                    return stack[-1][2][0]
    return done[id(schema)]


def check(schema: Any, what: str = "parameters_schema") -> dict[str, Any]:
    """A usable schema, or SchemaRefused: only local refs that resolve, bounded, well formed."""
    import jsonschema  # noqa: PLC0415 - jsonschema loads on the first schema check

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
    if expansion(schema) > MAX_EXPANSION:
        raise SchemaRefused(
            f"{what} unfolds to more than {MAX_EXPANSION} subschemas once its $ref are followed "
            "(each nested level of $ref under allOf/anyOf/oneOf multiplies the validation "
            "work); share fewer nested references")
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
    import jsonschema  # noqa: PLC0415 - jsonschema loads on the first schema check
    from referencing import Registry  # noqa: PLC0415 - referencing: on the first schema check

    cls = safepattern.on_re2(jsonschema.validators.validator_for(schema))
    return cls(schema, registry=Registry())


def instance_problem(instance: Any) -> str | None:
    """Why an instance is out of bounds (size, depth, not JSON), else None; cheap."""
    try:
        size = len(json.dumps(instance, ensure_ascii=False).encode("utf-8"))
    except UnicodeError:  # a lone surrogate: RE2 matches UTF-8, which cannot hold it
        return "(root): strings must be valid Unicode (a lone surrogate is not)"
    except (TypeError, ValueError):
        return "(root): not JSON"
    if size > MAX_INSTANCE_BYTES:
        return f"(root): {size} bytes; at most {MAX_INSTANCE_BYTES}"
    if not _depth_ok(instance, MAX_DEPTH):
        return f"(root): nested deeper than {MAX_DEPTH} levels"
    return None


def problems(schema: dict[str, Any] | None, instance: Any) -> list[str]:
    """Problems of instance against schema (empty: valid); never fetches, never raises.

    In the calling thread, without a time budget: the gateway validates client schemas with
    problems_off_loop() only."""
    if schema is None:
        return []
    bad = instance_problem(instance)
    return [bad] if bad is not None else validation_problems(schema, instance)


def validation_problems(schema: dict[str, Any], instance: Any) -> list[str]:
    """Problems of a bounded instance against schema, at most MAX_PROBLEMS of them."""
    from referencing.exceptions import (  # noqa: PLC0415 - referencing: on the first schema check
        Unresolvable,
    )

    out: list[str] = []
    try:
        count = 0

        def counted(errors: Iterator[Any]) -> Iterator[Any]:
            nonlocal count
            for err in errors:
                count += 1
                yield err

        # the first MAX_PROBLEMS in path order, as sorted() gives them, without keeping the rest
        errors = heapq.nsmallest(MAX_PROBLEMS, counted(validator(schema).iter_errors(instance)),
                                 key=lambda e: [str(p) for p in e.absolute_path])
        for err in errors:
            where = "/".join(str(p) for p in err.absolute_path)
            text = f"{where or '(root)'}: {err.message}"
            if len(text) > MAX_PROBLEM_CHARS:
                text = text[:MAX_PROBLEM_CHARS - 3] + "..."
            out.append(text)
        if count > MAX_PROBLEMS:
            out.append(f"(and {count - MAX_PROBLEMS} more problems)")
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
    """problems() in a validation worker process, killed past timeout_s (a problem then)."""
    if schema is None:
        return []
    bad = instance_problem(instance)
    if bad is not None:
        return [bad]
    return await schema_worker.validate(schema, instance, timeout_s)
