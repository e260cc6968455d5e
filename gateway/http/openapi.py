"""The OpenAPI 3.1 document, generated from the route registry (and scoped projections)."""

from __future__ import annotations

import itertools
from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..model.ids import MAX_ID_LENGTH
from ..model.roles import Role
from .routes import API_PREFIX, ENTITY_PARAM, Registry, Route

if TYPE_CHECKING:
    from .schemas import OperationDoc
# The route contracts (schemas.py, feature_schemas.py) load on the first /docs: not at start.

SOVD_VERSION = "1.1.0"

_ERROR = {"$ref": "#/components/schemas/GenericError"}
_ERROR_STATUSES = {
    "400": "Invalid request",
    "404": "Resource not found",
    "416": "Unparseable Range header (Range is parsed before routing)",
    "500": "Internal error",
}
_SCHEMAS: dict[str, Any] = {
    "GenericError": {
        "type": "object",
        "required": ["error_code", "message"],
        "properties": {
            "error_code": {"type": "string"},
            "vendor_code": {"type": "string"},
            "message": {"type": "string"},
            "parameters": {"type": "object"},
        },
    },
    "ListEnvelope": {
        "type": "object",
        "required": ["items"],
        "properties": {"items": {"type": "array"}},
    },
    "EntityList": {"$ref": "#/components/schemas/ListEnvelope"},
    "EntityDetail": {
        "type": "object",
        "required": ["id", "name", "type", "href"],
        "properties": {
            "id": {"type": "string"}, "name": {"type": "string"},
            "type": {"enum": ["area", "component", "app", "function"]},
            "href": {"type": "string"}, "capabilities": {"type": "array"},
        },
    },
    "DataList": {"$ref": "#/components/schemas/ListEnvelope"},
    "DataRead": {
        "type": "object",
        "required": ["id", "data"],
        "properties": {"id": {"type": "string"}, "data": {}},
    },
    "Message": {"type": "object", "description": "Fields of the topic's message type"},
    "LogConfiguration": {
        "type": "object",
        "properties": {
            "severity_filter": {"enum": ["debug", "info", "warning", "error", "fatal"],
                                "description": "lowest severity kept"},
            "max_entries": {"type": "integer", "minimum": 1, "maximum": 10000,
                            "description": "newest entries returned"},
        },
    },
    "Object": {"type": "object"},
}


def add_schemas(schemas: dict[str, Any]) -> None:
    """Name more component schemas (a resource module's request and response bodies)."""
    _SCHEMAS.update(schemas)


@cache
def _docs() -> dict[tuple[str, str], OperationDoc]:
    """Every documented route contract: the core table and the later features' rows."""
    from . import feature_schemas  # noqa: PLC0415 - route contracts load on the first /docs (USS)
    from .schemas import ROUTE_DOCS  # noqa: PLC0415 - route contracts load on the first /docs (USS)

    return {**ROUTE_DOCS, **feature_schemas.ROUTE_DOCS}

_LOCKABLE = ("/components/", "/apps/")  # a lock of another client refuses their writes (409)
_OPTIONAL_BODY = ("ExecutionRequest", "LogConfigurationWrite")  # all fields optional
# Entity ids (and sub-entity ids): the spec's charset, else 400 invalid-parameter.
_ID_PARAMS = (*ENTITY_PARAM.values(), "sub_id")
_ID = {"type": "string", "pattern": f"^[A-Za-z0-9_-]{{1,{MAX_ID_LENGTH}}}$"}

_TAG_TEXT = {"server": "Server-level routes", "docs": "OpenAPI documents",
             "areas": "Area entities and their collections",
             "components": "Component entities and their collections",
             "apps": "App entities (ROS 2 nodes) and their collections",
             "functions": "Function entities and their collections"}
_STATUS_TEXT = {200: "OK", 201: "Created", 202: "Accepted", 204: "No Content",
                206: "Partial Content", 207: "Multi-Status", 405: "Method Not Allowed"}


def _content(ctype: str, schema: str | None) -> dict[str, Any]:
    return {ctype: {"schema": {"$ref": f"#/components/schemas/{schema}"} if schema
                    else {"type": "object"}}}


def _responses(route: Route, vendor: str) -> tuple[dict[str, Any], OperationDoc | None]:
    """Success and error responses of a route (its contract row when it has one)."""
    responses: dict[str, Any] = {}
    error = {"application/json": {"schema": _ERROR}}
    from .schemas import doc_for  # noqa: PLC0415 - route contracts load on the first /docs (USS)

    doc = None if route.extra.get("stub") else doc_for(route.method, route.path, route.status,
                                                       vendor, _docs())
    if route.extra.get("stub"):
        pass  # an absent feature answers 501 and nothing else of its own
    elif doc is not None:
        for status, schema in doc.responses.items():
            resp: dict[str, Any] = {"description": _STATUS_TEXT.get(status, "Success")}
            if schema is not None:  # 204, or an accepted request answered without a body
                resp["content"] = _content(doc.response_type, schema)
            responses[str(status)] = resp
        for status, text in doc.errors.items():
            responses[str(status)] = {"description": text, "content": error}
    else:
        for status in (route.status, *route.alternates):
            resp = {"description": _STATUS_TEXT.get(status, "Success")}
            if status != 204:
                ctype = "text/event-stream" if route.streaming else "application/json"
                resp["content"] = _content(ctype, route.response)
            responses[str(status)] = resp
    if doc is not None and doc.oauth:
        oauth = {"application/json": {"schema": {"$ref": "#/components/schemas/OAuthError"}}}
        responses["400"] = {"description": "OAuth2 error (RFC 6749)", "content": oauth}
        responses["401"] = {"description": "Client authentication failed", "content": oauth}
        responses["500"] = {"description": "Internal error", "content": oauth}
        responses["503"] = {"description": "This gateway issues no tokens (no signing key)",
                            "content": oauth}
    for code, text in _ERROR_STATUSES.items():
        responses.setdefault(code, {"description": text, "content": error})
    if route.is_write and route.path.startswith(_LOCKABLE) and not route.extra.get("stub"):
        responses.setdefault("409", {"description": "The entity is locked by another client",
                                     "content": error})
    if route.is_write:  # a store's write on a full or read-only disk (process/storage.py)
        responses.setdefault("507", {"description": "Insufficient storage: the message names "
                                     "the directory and its free space", "content": error})
    if route.feature:
        responses["501"] = {"description": f"Feature '{route.feature}' not available",
                            "content": error}
    return responses, doc


def _operation(route: Route, vendor: str, with_roles: bool) -> dict[str, Any]:
    params = [
        {"name": p, "in": "path", "required": True,
         "schema": dict(_ID) if p in _ID_PARAMS else {"type": "string"}}
        for p in route.params
    ]
    for name, text in route.extra.get("headers", {}).items():  # required request headers
        params.append({"name": name, "in": "header", "required": True, "description": text,
                       "schema": {"type": "string", "minLength": 1}})
    responses, doc = _responses(route, vendor)
    op: dict[str, Any] = {
        "operationId": route.operation_id,
        "summary": (route.summary or "").strip().split("\n")[0],
        "tags": [route.tag],
        "responses": responses,
    }
    if params:
        op["parameters"] = params
    request = doc.request if doc is not None else route.request
    if request and not route.extra.get("stub"):
        ctype = route.extra.get("request_content_type", "application/json")
        content = _content(doc.request_type if doc is not None else ctype, request)
        if doc is not None and doc.encoding:
            content[doc.request_type]["encoding"] = doc.encoding
        if doc is not None and doc.oauth:  # RFC 6749: form-encoded; JSON accepted too
            content.update(_content("application/x-www-form-urlencoded", request))
        # An execution may be started, and a log configuration sent, without a body.
        op["requestBody"] = {"required": request not in _OPTIONAL_BODY, "content": content}
    if route.alternates or (doc is not None and doc.alternates):
        op[f"x-{vendor}-alternates"] = True
    if with_roles and not route.extra.get("public"):
        # Plugin-served routes need admin whatever role they declare (spec: admin wildcards).
        role = Role.ADMIN if route.extra.get("plugin") else route.role
        op[f"x-{vendor}-required-role"] = role.label
        op["security"] = [{"bearerAuth": []}]
        for code, text in (("401", "Token missing, invalid or expired"),
                           ("403", f"Role '{role.label}' or higher required")):
            responses[code] = {"description": text,
                               "content": {"application/json": {"schema": _ERROR}}}
    return op


def build(registry: Registry, *, vendor: str, version: str, with_roles: bool) -> dict[str, Any]:
    """The full document."""
    from . import feature_schemas  # noqa: PLC0415 - route contracts load on the first /docs (USS)
    from .schemas import components  # noqa: PLC0415 - route contracts load on the first /docs (USS)

    paths: dict[str, dict[str, Any]] = {}
    for route in registry:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(
            route, vendor, with_roles)
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        # x-sovd-version at the top (the spec) and in `info` (where the reference puts it)
        "info": {"title": "diag-gateway", "version": version,
                 "description": "SOVD-style diagnostic gateway for ROS 2",
                 "x-sovd-version": SOVD_VERSION},
        "x-sovd-version": SOVD_VERSION,
        "servers": [{"url": API_PREFIX}],
        "tags": tags_of(paths),
        "paths": paths,
        "components": {"schemas": {**_SCHEMAS, **components(vendor),
                                   **feature_schemas.components(vendor)},
                       # the reference's shared error response, versioned like its document
                       "responses": {"GenericError": {
                           "description": "Error (the spec's GenericError body)",
                           "x-sovd-version": SOVD_VERSION,
                           "content": {"application/json": {"schema": _ERROR}}}}},
    }
    if with_roles:
        doc["components"]["securitySchemes"] = {
            "bearerAuth": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}}
    return doc


def tags_of(paths: dict[str, dict[str, Any]]) -> list[dict[str, str]]:
    """The document's global `tags`: each tag its operations use, once, in first-use order."""
    seen: dict[str, None] = {}
    for ops in paths.values():
        for op in ops.values():
            for tag in op.get("tags", ()):
                seen.setdefault(tag, None)
    return [{"name": tag, "description": _TAG_TEXT.get(tag, f"Routes of {tag}")}
            for tag in seen]


def _matches(template: list[str], prefix: list[str]) -> dict[str, str] | None:
    if len(template) < len(prefix):
        return None
    values: dict[str, str] = {}
    for t, p in zip(template, prefix, strict=False):
        if t.startswith("{") and t.endswith("}"):
            values[t[1:-1]] = p
        elif t != p:
            return None
    return values


def project(doc: dict[str, Any], prefix: str,
            expand: dict[str, list[str]]) -> dict[str, Any] | None:
    """The document restricted to paths at or below prefix, ids substituted.

    `expand` maps a path parameter (e.g. data_id, op_id) to the discovered values for it;
    paths with such parameters are listed once per value (URL-encoded). None when nothing
    matches.
    """
    want = [s for s in prefix.strip("/").split("/") if s]
    paths: dict[str, Any] = {}
    for template, ops in doc["paths"].items():
        segs = [s for s in template.strip("/").split("/") if s]
        values = _matches(segs, want)
        if values is None:
            continue
        concrete = "/" + "/".join(
            values.get(s[1:-1], s) if s.startswith("{") else s for s in segs)
        rest = [s[1:-1] for s in segs[len(want):] if s.startswith("{")]
        keys = [r for r in rest if r in expand]
        if not keys:
            paths[concrete] = ops
            continue
        # One path per discovered item (ids URL-encoded); other parameters stay templated.
        # Item paths carry no payload schema.
        bare = {m: {k: v for k, v in op.items() if k not in ("parameters", "requestBody")}
                for m, op in ops.items()}
        for combo in itertools.product(*(expand[k] for k in keys)):
            item = concrete
            for key, value in zip(keys, combo, strict=True):
                item = item.replace("{" + key + "}", quote(value, safe=""))
            paths[item] = bare
    if not paths:
        return None
    out = dict(doc)
    out["paths"] = paths
    out["tags"] = tags_of(paths)
    out["servers"] = [{"url": API_PREFIX}]
    return out
