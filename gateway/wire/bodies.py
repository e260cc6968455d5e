"""Lenient request bodies: every form the spec or the reference accepts, errors naming fields."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

import orjson
from aiohttp import web

from ..errors import INVALID_REQUEST, ApiError, invalid_parameter
from ..http.jsonutil import read_limited
from ..ros.interfaces.message import MessageFieldError, dict_to_message

# Keys that make an execution body an envelope, by operation kind, in precedence order.
ENVELOPE_KEYS = ("parameters", "goal", "request")
REQUEST_KEYS = {"service": ("parameters", "request"), "action": ("parameters", "goal")}
# A newer web client sends its fields as `input` (used when no message field has that name).
INPUT_KEY = "input"
_TYPE_FORMAT = re.compile(r"^[A-Za-z][A-Za-z0-9_]*/(msg|srv|action)/[A-Za-z][A-Za-z0-9_]*$")


def validation_error(fields: list[tuple[str, str]], message: str = "",
                     **parameters: Any) -> ApiError:
    """400 invalid-request whose `parameters.fields` names each bad field."""
    text = message or "Request body validation failed: " + "; ".join(
        f"{f or '(body)'}: {m}" for f, m in fields)
    params: dict[str, Any] = {"fields": [{"field": f, "message": m} for f, m in fields]}
    if fields:  # the first bad field also as `field` (older clients read that)
        params["field"] = fields[0][0]
    params.update(parameters)
    return ApiError(400, INVALID_REQUEST, text, parameters=params)


def parse_object(raw: bytes, empty_ok: bool = True) -> dict[str, Any]:
    """A JSON object body; empty is {} when empty_ok; 400 naming the problem otherwise."""
    if not raw.strip():
        if empty_ok:
            return {}
        raise validation_error([("", "a JSON object is required")],
                               "Request body is empty; a JSON object is required")
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ApiError(400, INVALID_REQUEST,
                       f"Malformed JSON: the request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise validation_error([("", f"expected object, got {_kind(body)}")],
                               f"Request body must be a JSON object, got {_kind(body)}")
    return body


async def read_object(request: web.BaseRequest, empty_ok: bool = True,
                      limit: int | None = None) -> dict[str, Any]:
    """The request body as a JSON object (see parse_object); `limit` for an unrouted request."""
    return parse_object(await read_limited(request, limit), empty_ok)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(
        type(value), "number")


def same_type(given: str, actual: str) -> bool:
    """True when two interface names match (pkg/Type equals pkg/msg/Type)."""
    g, a = given.strip("/").split("/"), actual.strip("/").split("/")
    return bool(g and a) and g[0] == a[0] and g[-1] == a[-1]


def execution_request(body: Mapping[str, Any], kind: str,
                      field_names: Collection[str]) -> tuple[dict[str, Any], str | None]:
    """(request or goal fields, type override) of an execution POST body.

    Envelope form when any of parameters/goal/request is present (parameters first, then
    `request` for services or `goal` for actions); otherwise the spec's older form, whose
    top-level keys naming message fields are the fields. Other keys are ignored.
    """
    errors: list[tuple[str, str]] = []
    envelope = any(k in body for k in ENVELOPE_KEYS)
    # In the older form a message field named `type` is a field, not the override.
    override = body.get("type") if envelope or "type" not in field_names else None
    if override is not None and not isinstance(override, str):
        errors.append(("type", f"expected a string, got {_kind(override)}"))
    if envelope:
        fields: Any = {}
        for key in REQUEST_KEYS[kind]:
            if body.get(key) is not None:
                fields = body[key]
                if not isinstance(fields, dict):
                    errors.append((key, f"expected object, got {_kind(fields)}"))
                break
    elif isinstance(body.get(INPUT_KEY), dict) and INPUT_KEY not in field_names:
        fields = body[INPUT_KEY]
    else:
        fields = {k: v for k, v in body.items() if k in field_names}
    if errors:
        raise validation_error(errors)
    return fields, (override or None) if isinstance(override, str) else None


def envelope_key(body: Mapping[str, Any], kind: str) -> str:
    """The envelope key execution_request took the fields from ("" for the older form)."""
    for key in REQUEST_KEYS[kind]:
        if body.get(key) is not None:
            return key
    if not any(k in body for k in ENVELOPE_KEYS) and isinstance(body.get(INPUT_KEY), dict):
        return INPUT_KEY
    return ""


def check_type_override(given: str | None, actual: str) -> None:
    """400 when a `type` override names another interface than the operation's or topic's."""
    if given and not same_type(given, actual):
        raise validation_error([("type", f"expected {actual}, the type on the ROS graph")])


def build_message(cls: type, fields: Mapping[str, Any], prefix: str = "",
                  **parameters: Any) -> Any:
    """The message of `fields`; 400 naming every bad top-level field otherwise."""
    try:
        return dict_to_message(cls, fields)
    except MessageFieldError as first:
        errors: list[tuple[str, str]] = []
        for key, value in fields.items():
            try:
                dict_to_message(cls, {key: value})
            except MessageFieldError as exc:
                errors.append((exc.field or str(key), exc.reason))
        if not errors:
            errors.append((first.field, first.reason))
        named = [(f"{prefix}.{f}" if prefix and f else prefix or f, m) for f, m in errors]
        text = "; ".join(f"field '{f}': {m}" if f else m for f, m in errors)
        raise validation_error(
            named, f"Request body validation failed: {text}",
            **{"field": errors[0][0], "path": named[0][0], "reason": errors[0][1],
               **parameters}) from None


# Said when a body naming `data` but no `type` is no message of the topic's type: it was read
# as the bare message, while its sender likely meant the envelope (the reference's wording).
MISSING_TYPE = ("type: missing required field (a body with 'data' but no 'type' is read as "
                "the message itself; the envelope is {\"type\": \"pkg/msg/Type\", "
                "\"data\": {...}})")


def build_data_message(cls: type, fields: Mapping[str, Any], declared: str | None,
                       **parameters: Any) -> Any:
    """build_message for a data PUT; the refusal of an envelope lacking `type` says so."""
    try:
        return build_message(cls, fields, "data" if declared else "", **parameters)
    except ApiError as err:
        if declared is None and "data" in fields and "type" not in fields:
            err.message = f"{err.message}; {MISSING_TYPE}"
            err.args = (err.message,)
        raise


def untyped_topic(topic: str) -> ApiError:
    """400 for a write to a topic off the graph whose body names no message type."""
    return validation_error([("type", "missing required field")],
                            f"type: missing required field (topic '{topic}' is not on the ROS "
                            "graph, so the body must name its message type: {\"type\": "
                            "\"pkg/msg/Type\", \"data\": {...}})", topic=topic)


def configuration_value(body: Mapping[str, Any]) -> Any:
    """The value of a configuration PUT: `data` (reference), else `value` (spec)."""
    for key in ("data", "value"):
        if key in body:
            return body[key]
    raise validation_error([("data", "missing required field (or send 'value')")],
                           "Request body must contain a 'data' field (or 'value')")


def data_message(body: Mapping[str, Any]) -> tuple[Any, str | None]:
    """(message fields, declared type) of a data PUT: the `{type, data}` envelope or bare.

    A newer web client wraps the envelope as `{value: {type, data}}`; that is unwrapped too.
    """
    inner = body.get("value")
    if len(body) == 1 and isinstance(inner, dict) and isinstance(inner.get("type"), str) \
            and "data" in inner:
        body = inner
    declared = body.get("type")
    if not (isinstance(declared, str) and "data" in body):
        return body, None
    if not _TYPE_FORMAT.match(declared):
        raise invalid_parameter("Invalid message type format", field="type", type=declared,
                                details="Message type should be in format: package/msg/Type")
    fields = body["data"]
    if not isinstance(fields, dict):
        raise validation_error([("data", f"expected object, got {_kind(fields)}")])
    return fields, declared
