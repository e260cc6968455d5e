"""Create and update rules of cyclic subscriptions and triggers (pure; explicit `now`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ApiError, invalid_parameter
from ..model.resource_uris import API_PREFIX, ResourceRef, UriError, parse_resource
from .conditions import Condition, ConditionError, parse_condition, parse_pointer

INTERVALS = {"fast": 0.05, "normal": 0.2, "slow": 0.5}
DEFAULT_DURATION_S = 3600
# Collections a cyclic subscription streams as a whole (plus x-* of plugins).
WHOLE_COLLECTIONS = ("faults", "configurations", "logs")
SUBSCRIBABLE = ("components", "apps", "functions")  # entity types with cyclic subscriptions
TRIGGER_COLLECTIONS = ("data", "faults", "operations", "updates", "logs")
LOG_SEVERITIES = ("debug", "info", "warning", "error", "fatal")


def uri_error(message: str, value: Any) -> ApiError:
    """400 x-vendor-invalid-resource-uri."""
    return ApiError(400, "vendor-error", message, vendor_code="x-vendor-invalid-resource-uri",
                    parameters={"parameter": "resource", "value": value})


def _vendor400(code: str, message: str, **parameters: Any) -> ApiError:
    return ApiError(400, "vendor-error", message, vendor_code=code,
                    parameters=parameters or None)


def _resource(body: Mapping[str, Any], entity_type: str, entity_id: str) -> ResourceRef:
    raw = body.get("resource")
    if raw is None or raw == "":
        raise invalid_parameter("'resource' is required: the URI of the observed collection, "
                                f"e.g. {API_PREFIX}/{entity_type}/{entity_id}/data/<topic>",
                                parameter="resource")
    if not isinstance(raw, str):
        raise invalid_parameter("'resource' must be a string", parameter="resource")
    try:
        ref = parse_resource(raw)
    except UriError as exc:
        raise uri_error(str(exc), raw) from None
    if (ref.entity_type, ref.entity_id) != (entity_type, entity_id):
        raise _vendor400("x-vendor-entity-mismatch",
                         f"resource names /{ref.entity_type}/{ref.entity_id} but the route is "
                         f"/{entity_type}/{entity_id}; both must be the same entity",
                         resource=raw, entity_id=entity_id)
    return ref


def _protocol(body: Mapping[str, Any]) -> None:
    protocol = body.get("protocol", "sse")
    if protocol != "sse":
        raise _vendor400("x-vendor-unsupported-protocol",
                         f"protocol {protocol!r} is not supported; only 'sse'",
                         parameter="protocol", value=protocol)


def _duration(value: Any, max_duration: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0 \
            or value > max_duration:
        raise invalid_parameter(
            f"'duration' must be an integer number of seconds from 1 to {max_duration} "
            f"(setting sse.max_duration_sec); got {value!r}", parameter="duration", value=value)
    return value


def _interval(value: Any) -> str:
    if value not in INTERVALS:
        raise invalid_parameter(f"'interval' must be one of fast (50 ms), normal (200 ms), "
                                f"slow (500 ms); got {value!r}", parameter="interval",
                                value=value)
    return str(value)


@dataclass
class SubscriptionSpec:
    """A checked create body of a cyclic subscription."""

    ref: ResourceRef
    interval: str
    duration: int


def subscription_create(body: Any, entity_type: str, entity_id: str, max_duration: int,
                        collections: Mapping[str, bool]) -> SubscriptionSpec:
    """Check a create body; `collections` maps x-* names to whether a provider serves them."""
    if not isinstance(body, Mapping):
        raise ApiError(400, "invalid-request", "Request body must be a JSON object with "
                       "'resource', 'interval' and 'duration'")
    ref = _resource(body, entity_type, entity_id)
    _protocol(body)
    if "interval" not in body:
        raise invalid_parameter("'interval' is required: fast, normal or slow",
                                parameter="interval")
    interval = _interval(body["interval"])
    duration = _duration(body.get("duration", min(DEFAULT_DURATION_S, max_duration)),
                         max_duration)
    col = ref.collection
    if col == "data":
        if not ref.path:
            raise uri_error("a data subscription needs a topic path: "
                            f"{API_PREFIX}/{entity_type}/{entity_id}/data/<topic>", ref.uri)
    elif col in WHOLE_COLLECTIONS or col.startswith("x-"):
        if ref.path:
            raise uri_error(f"'{col}' streams as a whole collection: drop the item path "
                            f"{ref.path!r} from the resource", ref.uri)
        if col.startswith("x-") and not collections.get(col, False):
            raise _vendor400("x-vendor-collection-not-available",
                             f"no provider serves the collection '{col}' on "
                             f"{entity_type} '{entity_id}'", collection=col)
    else:
        raise _vendor400("x-vendor-collection-not-supported",
                         f"'{col}' cannot be subscribed to; use data/<topic>, faults, "
                         "configurations, logs or an x- collection", collection=col)
    return SubscriptionSpec(ref, interval, duration)


def subscription_update(body: Any, max_duration: int) -> tuple[str | None, int | None]:
    """(interval, duration) a PUT body changes (None: unchanged)."""
    if not isinstance(body, Mapping):
        raise ApiError(400, "invalid-request",
                       "Request body must be a JSON object with 'interval' and/or 'duration'")
    if "interval" not in body and "duration" not in body:
        raise invalid_parameter("Give 'interval' and/or 'duration' to change",
                                parameter="interval")
    interval = _interval(body["interval"]) if "interval" in body else None
    duration = _duration(body["duration"], max_duration) if "duration" in body else None
    return interval, duration


@dataclass
class TriggerSpec:
    """A checked create body of a trigger."""

    ref: ResourceRef
    condition: Condition
    path: str | None
    pointer: tuple[str, ...]
    multishot: bool
    persistent: bool
    lifetime: int | None
    log_settings: dict[str, Any] | None


def _lifetime(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise invalid_parameter(f"'lifetime' must be a positive integer of seconds; got "
                                f"{value!r}", parameter="lifetime", value=value)
    return value


def trigger_create(body: Any, entity_type: str, entity_id: str) -> TriggerSpec:
    """Check a trigger create body in the reference's order."""
    if not isinstance(body, Mapping):
        raise ApiError(400, "invalid-request", "Request body must be a JSON object with "
                       "'resource' and 'trigger_condition'")
    raw_cond = body.get("trigger_condition")
    if not isinstance(raw_cond, Mapping) or not isinstance(raw_cond.get("condition_type"), str):
        raise invalid_parameter("'trigger_condition' must be an object with a string "
                                "'condition_type' (OnChange, OnChangeTo, EnterRange, "
                                "LeaveRange)", parameter="trigger_condition")
    ref = _resource(body, entity_type, entity_id)
    # No event source feeds an x- collection (no plugin registers trigger conditions), so a
    # trigger on one would never fire: refused like any collection triggers cannot observe.
    if ref.collection not in TRIGGER_COLLECTIONS:
        raise invalid_parameter(f"'{ref.collection}' cannot be observed by a trigger; use "
                                f"{', '.join(TRIGGER_COLLECTIONS)}",
                                parameter="resource", collection=ref.collection)
    if ref.collection == "data" and not ref.path:
        raise uri_error("a data trigger needs a topic path: "
                        f"{API_PREFIX}/{entity_type}/{entity_id}/data/<topic>", ref.uri)
    path = body.get("path")
    pointer: tuple[str, ...] = ()
    if path is not None:
        try:
            pointer = parse_pointer(path)
        except ConditionError as exc:
            raise invalid_parameter(str(exc), parameter="path", value=path) from None
    _protocol(body)
    lifetime = _lifetime(body["lifetime"]) if body.get("lifetime") is not None else None
    try:
        condition = parse_condition(raw_cond)
    except ConditionError as exc:
        raise invalid_parameter(str(exc), parameter="trigger_condition") from None
    flags = {}
    for name in ("multishot", "persistent"):
        value = body.get(name, False)
        if not isinstance(value, bool):
            raise invalid_parameter(f"'{name}' must be true or false; got {value!r}",
                                    parameter=name)
        flags[name] = value
    settings = body.get("log_settings")
    log_settings = None
    if isinstance(settings, Mapping):
        severity = settings.get("severity", "info")
        if severity not in LOG_SEVERITIES:
            raise invalid_parameter(f"'log_settings.severity' must be one of "
                                    f"{', '.join(LOG_SEVERITIES)}; got {severity!r}",
                                    parameter="log_settings")
        marker = settings.get("marker", "Trigger fired")
        if not isinstance(marker, str):
            raise invalid_parameter("'log_settings.marker' must be a string",
                                    parameter="log_settings")
        log_settings = {"severity": severity, "marker": marker}
    return TriggerSpec(ref, condition, path, pointer, flags["multishot"], flags["persistent"],
                       lifetime, log_settings)


def trigger_update(body: Any) -> int:
    """The new lifetime of a trigger PUT body."""
    if not isinstance(body, Mapping) or "lifetime" not in body:
        raise invalid_parameter("Request body must be a JSON object with 'lifetime' (seconds)",
                                parameter="lifetime")
    return _lifetime(body["lifetime"])
