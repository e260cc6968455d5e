"""Data collection: topics of an entity, newest sample reads, publishing."""

from __future__ import annotations

import asyncio
import functools
import time
from typing import Any

import orjson
from aiohttp import web

from ..errors import ApiError, invalid_parameter, not_found, vendor_error
from ..http.jsonutil import dumps, json_response
from ..http.resource_helpers import list_collection, resolve_entity
from ..http.routes import Registry
from ..http.state import GatewayState, state_of
from ..locks.guard import guard_members
from ..model.entities import Entity
from ..model.ids import split_qualified
from ..model.roles import Role
from ..ros.interfaces.described import DescribedTypes
from ..ros.interfaces.interface_paths import SETTING as INTERFACE_PATHS
from ..ros.interfaces.message import (
    MessageFieldError,
    UnknownTypeError,
    default_value,
    import_type,
    type_schema,
)
from ..ros.settings import RosServiceSettings
from ..ros.topics.samples import sample_to_json
from ..wire.bodies import (
    build_data_message,
    check_type_override,
    data_message,
    read_object,
    validation_error,
)
from .reads import reads_of
from .topics import TopicRef, entity_topics
from .wire import DATA

# Samples above this size are converted off the event loop.
OFFLOOP_BYTES = 64 * 1024


def sample_budget(state: GatewayState) -> float:
    """How long a read waits for a first sample (setting `topic_sample_timeout_sec`)."""
    return state.settings.typed(RosServiceSettings.from_settings).topic_sample_timeout_sec


@functools.lru_cache(maxsize=512)
def type_info(type_name: str) -> dict[str, Any] | None:
    """JSON Schema and default value of a message type; None when the type is not installed."""
    try:
        cls = import_type(type_name)
    except UnknownTypeError:
        return None
    return {"schema": type_schema(cls), "default_value": default_value(cls)}


@functools.lru_cache(maxsize=512)
def type_info_json(type_name: str) -> orjson.Fragment | None:
    """type_info pre-serialized (reads embed it in every answer)."""
    info = type_info(type_name)
    return None if info is None else orjson.Fragment(dumps(info))


def data_item(state: GatewayState, ref: TopicRef) -> dict[str, Any]:
    """One data list item in the wire profile (gateway/data/wire.py); a type the gateway
    cannot serve is marked (`type_available: false` and the setting that fixes it)."""
    info = type_info(ref.type)
    item: dict[str, Any] = state.serializer(DATA).item(ref, info)
    if info is None and ref.type:
        item[state.xv].update(unserved_type_vendor(ref.type))
    return item


def unserved_type_vendor(type_name: str) -> dict[str, Any]:
    """Vendor fields of an item whose type the gateway cannot serve."""
    return {"type_available": False, "type_setting": INTERFACE_PATHS}


def type_unavailable(type_name: str, what: str, exc: Exception, **parameters: Any) -> ApiError:
    """501: the gateway has no typesupport for the type; names the setting that fixes it."""
    return vendor_error(
        501, "x-vendor-ros2-topic-type-unavailable",
        f"{what}: the gateway has no message type '{type_name}' ({exc}); give it the robot's "
        f"install prefix in the setting '{INTERFACE_PATHS}'",
        type=type_name, setting=INTERFACE_PATHS, **parameters)


def check_data_type(declared: str | None) -> None:
    """400 unless a declared data type is a message type (`pkg/msg/Type`)."""
    if declared is not None and "/msg/" not in declared:
        raise invalid_parameter(
            "Invalid message type format", field="type", type=declared,
            details="Message type should be in format: package/msg/Type (data carries "
                    "messages; services and actions are operations)")


def local_items(state: GatewayState, entity: Entity) -> list[dict[str, Any]]:
    """This gateway's data items of an entity (fresh top-level dicts; cached per generation)."""
    cached = state.cache.body(("data-items", entity.kind, entity.id), lambda: [
        data_item(state, ref) for ref in entity_topics(state, entity).values()])
    return [dict(item) for item in cached]


async def _local_items(state: GatewayState, entity: Entity) -> list[dict[str, Any]]:
    return local_items(state, entity)


async def list_data(request: web.Request) -> web.Response:
    """Topics of an entity (aggregated over member apps, and over peers with aggregation)."""
    return await list_collection(request, "data", local_items)


def find_topic(state: GatewayState, entity: Entity, data_id: str) -> TopicRef:
    """The entity's topic named by a data id (bare or `<member>:<topic>`); 404 otherwise."""
    topics = entity_topics(state, entity)
    candidates = [data_id] if data_id.startswith("/") else [data_id, "/" + data_id]
    for name in candidates:
        if name in topics:
            return topics[name]
    member, item = split_qualified(data_id)
    if member is not None:
        topic = item if item.startswith("/") else "/" + item
        ref = topics.get(topic)
        if ref is not None and member in ref.member_ids:
            return ref
    raise not_found(f"Data item '{data_id}' not found on {entity.type} '{entity.id}'",
                    entity_id=entity.id, data_id=data_id)


def unlisted_topic(state: GatewayState, data_id: str, declared: str | None = None
                   ) -> TopicRef | None:
    """A topic the entity lacks, for profiles that address any path (its graph type, else the
    declared one); None otherwise."""
    if not state.serializer(DATA).address_any_topic:
        return None
    topic = data_id if data_id.startswith("/") else "/" + data_id
    info = state.cache.graph.topics.get(topic)
    if info is not None and info.type:
        return TopicRef(topic, info.type)
    return TopicRef(topic, declared) if declared else None


async def read_data(request: web.Request) -> web.Response:
    """Newest sample of one topic."""
    state = state_of(request)
    entity = resolve_entity(request)
    data_id = request.match_info["data_id"]
    try:
        ref = find_topic(state, entity, data_id)
    except ApiError:
        if not state.serializer(DATA).address_any_topic:
            raise
        found = unlisted_topic(state, data_id)
        if found is None:  # nothing on the graph: metadata only (reference behaviour)
            topic = data_id if data_id.startswith("/") else "/" + data_id
            xv = state.serializer(DATA).read_vendor(entity.id, topic, "", None, None)
            xv["status"] = "metadata_only"
            return json_response({"id": topic, "data": {}, state.xv: xv})
        ref = found
    reads = reads_of(state)  # the body cache, its policy and its replay: data_reads.py
    view = (entity.kind, entity.id, ref.topic)
    entry = state.pool.peek(ref.topic, ref.type)
    if entry is not None:
        sample = entry.sample
        cached = reads.body(view, entry, state.cache.generation)
        if cached is not None:
            reads.offer(state, request, view)
            return web.Response(body=cached, content_type="application/json")
    else:
        try:
            sample, entry = await state.pool.latest(
                ref.topic, ref.type, sample_budget(state))
        except UnknownTypeError as exc:
            return await _read_described(state, entity, ref, exc)
    info = state.cache.graph.topics.get(ref.topic)
    xv = state.serializer(DATA).read_vendor(entity.id, ref.topic, ref.type, info,
                                     type_info_json(ref.type))
    if sample is None:
        xv["status"] = "metadata_only"
        return json_response({"id": ref.topic, "data": {}, state.xv: xv})
    generation = state.cache.generation
    js = reads.json(entry, sample)
    if js is None:
        if len(sample.data) > OFFLOOP_BYTES:
            js = await asyncio.get_running_loop().run_in_executor(
                None, sample_to_json, ref.type, sample.data)
        else:
            js = sample_to_json(ref.type, sample.data)
        reads.put_json(entry, sample, js)
    xv["timestamp"] = sample.source_ns or sample.received_ns
    xv["status"] = "data"
    body = dumps({"id": ref.topic, "data": orjson.Fragment(js), state.xv: xv})
    if generation == state.cache.generation:  # no graph change while converting off-loop
        reads.put(view, entry, sample, generation, body)
        reads.offer(state, request, view)
    return web.Response(body=body, content_type="application/json")


async def _read_described(state: GatewayState, entity: Entity, ref: TopicRef,
                          exc: Exception) -> web.Response:
    """A read of a type the gateway lacks, from the description a node serves (REP-2011);
    503 while it is fetched, 501 when no node describes it."""
    described = described_types(state)
    timeout = sample_budget(state)
    await _described_ready(described, ref, f"Cannot read {ref.topic}", exc, timeout)
    try:
        js, received_ns = await described.latest(ref.topic, ref.type, timeout)
    except (RuntimeError, OSError, ValueError) as failed:  # the rmw refused the reader
        raise type_unavailable(ref.type, f"Cannot read {ref.topic}", failed,
                               topic=ref.topic) from None
    xv = state.serializer(DATA).read_vendor(entity.id, ref.topic, ref.type,
                                     state.cache.graph.topics.get(ref.topic), None)
    xv["type_source"] = "type_description"
    if js is None:
        xv["status"] = "metadata_only"
        return json_response({"id": ref.topic, "data": {}, state.xv: xv})
    xv["timestamp"], xv["status"] = received_ns, "data"
    return web.Response(body=dumps({"id": ref.topic, "data": orjson.Fragment(js), state.xv: xv}),
                        content_type="application/json")


async def _described_ready(described: DescribedTypes, ref: TopicRef, what: str,
                           exc: Exception, timeout: float) -> None:
    """Return once the type's description is at hand; 503 while it is fetched, else 501."""
    status, reason = await described.ensure(ref.type, ref.topic, timeout)
    if status == "fetching":
        raise vendor_error(503, "x-vendor-ros2-type-description-pending",
                           f"Fetching the description of {ref.type} from a node on "
                           f"{ref.topic}; retry shortly", type=ref.type, topic=ref.topic,
                           setting=INTERFACE_PATHS)
    if status != "ready":
        raise type_unavailable(ref.type, what,
                               RuntimeError(f"{exc}; no type description: {reason}"),
                               topic=ref.topic)


async def _write_described(state: GatewayState, entity: Entity, ref: TopicRef,
                           fields: Any, declared: str | None, exc: Exception) -> web.Response:
    """A write of a type the gateway lacks, encoded from the description a node serves."""
    described = described_types(state)
    await _described_ready(described, ref, f"Cannot publish on {ref.topic}", exc,
                           sample_budget(state))
    try:
        matched = await described.publish(ref.topic, ref.type, fields)
    except MessageFieldError as bad:
        prefix = "data" if declared else ""
        path = f"{prefix}.{bad.field}" if prefix and bad.field else prefix or bad.field
        raise validation_error([(path, bad.reason)],
                               f"Request body validation failed: {bad}", topic=ref.topic,
                               field=bad.field, reason=bad.reason) from None
    except (RuntimeError, OSError, ValueError) as failed:  # the rmw refused the writer
        raise type_unavailable(ref.type, f"Cannot publish on {ref.topic}", failed,
                               topic=ref.topic) from None
    xv = {"entity_id": entity.id, "ros2": {"topic": ref.topic, "type": ref.type},
          "timestamp": time.time_ns(), "status": "published", "subscribers_matched": matched,
          "type_source": "type_description"}
    return json_response({"id": ref.topic, "data": fields, state.xv: xv})


def described_types(state: GatewayState) -> DescribedTypes:
    """The gateway's reader of types from node descriptions (made on first use)."""
    described = state.described_types
    if described is None:
        described = state.described_types = DescribedTypes(state.bridge)
        state.bridge.closers.append(described.close)
        if hasattr(state.bridge, "on_rejoin"):  # its raw readers and writers: the old node's
            state.bridge.on_rejoin(described.close)
    return described


async def write_data(request: web.Request) -> web.Response:
    """Publish one message built from the JSON body on a topic of the entity."""
    state = state_of(request)
    entity = resolve_entity(request)
    data_id = request.match_info["data_id"]
    try:
        ref = find_topic(state, entity, data_id)
    except ApiError as missing:
        body = await read_object(request, empty_ok=False)
        declared = data_message(body)[1]
        check_data_type(declared)
        found = unlisted_topic(state, data_id, declared)
        if found is None:
            raise state.serializer(DATA).unlisted_write(missing, data_id) from None
        ref = found
    guard_members(request, entity, "data", ref.member_ids)  # a locked member refuses
    body = await read_object(request, empty_ok=False)
    fields, declared = data_message(body)  # the `{type, data}` envelope or the bare message
    check_data_type(declared)
    check_type_override(declared, ref.type)
    try:
        cls = import_type(ref.type)
    except UnknownTypeError as exc:
        return await _write_described(state, entity, ref, fields, declared, exc)
    msg = build_data_message(cls, fields, declared, topic=ref.topic)
    matched = await state.pool.publish(ref.topic, ref.type, msg)
    xv = {"entity_id": entity.id, "ros2": {"topic": ref.topic, "type": ref.type},
          "timestamp": time.time_ns(), "status": "published", "subscribers_matched": matched}
    return json_response({"id": ref.topic, "data": fields, state.xv: xv})


def register(reg: Registry) -> None:
    """Declare the data routes."""
    reg.lists_items("data", _local_items)
    reg.entity_routes("GET", "/data", list_data, response="DataList", summary="List data items")
    reg.entity_routes("GET", "/data/{data_id}", read_data, multi_segment=("data_id",),
                      response="DataRead", summary="Read the newest sample of a topic")
    reg.entity_routes("PUT", "/data/{data_id}", write_data, multi_segment=("data_id",),
                      role=Role.OPERATOR, response="DataRead", request="Message",
                      summary="Publish a message on a topic")

