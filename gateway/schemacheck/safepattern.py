"""JSON Schema `pattern` and `patternProperties` on RE2: matching in linear time, never stuck.

jsonschema matches with Python's `re`, which backtracks: `^(a+)+$` against 40 `a` and a `!`
runs for hours inside one C call that holds the GIL, so the event loop, signal handlers and the
validation budget all stop with it. RE2 (`google-re2`) has no backtracking; what it cannot
express (backreferences, lookaround) is refused when the schema is checked. Every keyword of
jsonschema that matches a regex against an instance is replaced here: `pattern`,
`patternProperties`, `additionalProperties` (which skips the names patternProperties match);
`unevaluatedProperties` next to `patternProperties` is refused at check instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import re2

MAX_PATTERN_CACHE = 256  # compiled patterns kept


class PatternRefused(ValueError):
    """A pattern RE2 cannot compile; the message says why."""


def _options() -> Any:
    opts = re2.Options()
    opts.log_errors = False  # a refused pattern is our 400, not a line on stderr
    return opts


_OPTIONS = _options()


@lru_cache(maxsize=MAX_PATTERN_CACHE)
def compiled(pattern: str) -> Any:
    """The RE2 program of a pattern, or PatternRefused."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise PatternRefused(f"{reason} (RE2 syntax: no backreferences, no lookaround)") from None
    except (UnicodeError, TypeError) as exc:
        raise PatternRefused(f"not a usable regular expression ({exc})") from None


def search(pattern: str, text: str) -> bool:
    """Whether the pattern matches anywhere in text (JSON Schema patterns are unanchored)."""
    return compiled(pattern).search(text) is not None


def patterns_of(node: dict[str, Any]) -> Iterator[str]:
    """The regexes one schema object holds: its `pattern` and its `patternProperties` names."""
    if isinstance(node.get("pattern"), str):
        yield node["pattern"]
    props = node.get("patternProperties")
    if isinstance(props, dict):
        yield from (k for k in props if isinstance(k, str))


def _pattern(validator: Any, patrn: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError  # noqa: PLC0415 - jsonschema: on first use

    if validator.is_type(instance, "string") and not search(patrn, instance):
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def _pattern_properties(validator: Any, pprops: Any, instance: Any,
                        schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pprops.items():
        for k, v in instance.items():
            if search(pattern, k):
                yield from validator.descend(v, subschema, path=k, schema_path=pattern)


def _additional_properties(validator: Any, extra_schema: Any, instance: Any,
                           schema: Any) -> Iterator[Any]:
    from jsonschema._utils import (  # noqa: PLC0415 - jsonschema loads on the first schema check
        extras_msg,
    )
    from jsonschema.exceptions import ValidationError  # noqa: PLC0415 - jsonschema: on first use

    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = {p for p in instance
              if p not in properties and not any(search(pt, p) for pt in patterns)}
    if validator.is_type(extra_schema, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], extra_schema, path=extra)
    elif not extra_schema and extras:
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            names = ", ".join(repr(each) for each in sorted(patterns))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {names}")
        else:
            listed, verb = extras_msg(sorted(extras, key=str))
            yield ValidationError(f"Additional properties are not allowed ({listed} {verb} "
                                  "unexpected)")


KEYWORDS = {"pattern": _pattern, "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties}


@lru_cache(maxsize=16)
def on_re2(cls: Any) -> Any:
    """The jsonschema validator class `cls` with its regex keywords matched by RE2."""
    import jsonschema  # noqa: PLC0415 - jsonschema loads on the first schema check

    return jsonschema.validators.extend(
        cls, {k: fn for k, fn in KEYWORDS.items() if k in cls.VALIDATORS})
