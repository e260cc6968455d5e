"""Typed OpenAPI component schemas and the per-route contract (responses, bodies) they document.

Routes are matched by method and the path below their entity prefix, so one row covers
`/apps/{app_id}/data` and `/areas/{area_id}/subareas/{sub_id}/data` alike. A route without a
row keeps the response and request schema names of its registry row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_ENTITY_PREFIX = re.compile(
    r"^/(areas|components|apps|functions)/\{[a-z_]+\}(/(subareas|subcomponents)/\{sub_id\})?")


def ref(name: str) -> dict[str, str]:
    """A $ref to a component schema."""
    return {"$ref": f"#/components/schemas/{name}"}


def _form(required: tuple[str, ...], **props: Any) -> dict[str, Any]:
    """An OAuth2 request: string parameters, unknown ones ignored (RFC 6749 3.2)."""
    return {**_obj(required, **props), "additionalProperties": STR}


def _obj(required: tuple[str, ...] = (), **props: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = list(required)
    return out


def _list(item: Any, xv: str) -> dict[str, Any]:
    return _obj(("items",), items={"type": "array", "items": item}, **{xv: {"type": "object"}})


STR: dict[str, Any] = {"type": "string"}
TEXT: dict[str, Any] = {"type": "string", "minLength": 1}
INT: dict[str, Any] = {"type": "integer"}
NUM: dict[str, Any] = {"type": "number"}
BOOL: dict[str, Any] = {"type": "boolean"}
ANY: dict[str, Any] = {}
STRS: dict[str, Any] = {"type": "array", "items": STR}


def components(vendor: str) -> dict[str, Any]:
    """Every component schema; vendor-specific keys use the configured vendor word."""
    xv = f"x-{vendor}"
    entity = _obj(("id", "name", "href"), id=STR, name=STR, href=STR,
                  type={"enum": ["area", "component", "app", "function"]},
                  **{xv: {"type": "object"}})
    return {
        "GenericError": _obj(("error_code", "message"), error_code=STR, vendor_code=STR,
                             message=STR, parameters={"type": "object"}),
        "OAuthError": _obj(("error", "error_description"),
                           error={**STR, "description": "RFC 6749 error code"},
                           error_description=STR),
        "ClientCredentialsGrant": _form(
            ("grant_type", "client_id", "client_secret"),
            grant_type={"enum": ["client_credentials"]}, client_id=TEXT, client_secret=TEXT,
            scope={"enum": ["viewer", "operator", "configurator", "admin"]}),
        "RefreshTokenGrant": _form(("grant_type", "refresh_token"),
                                  grant_type={"enum": ["refresh_token"]}, refresh_token=TEXT),
        "RevokeRequest": _form(("token",), token={**TEXT, "description": "the refresh token"}),
        "TokenPair": _obj(("access_token", "token_type", "expires_in", "refresh_token"),
                          access_token=STR, token_type={"enum": ["Bearer"]}, expires_in=INT,
                          refresh_token=STR, scope=STR),
        "Empty": {"type": "object", "maxProperties": 0},
        "Revoked": _obj(("status",), status={"enum": ["revoked"]}),
        "Capabilities": _obj(("name", "version", "api_base", "endpoints", "capabilities"),
                             name=STR, version=STR, api_base=STR, endpoints=STRS,
                             capabilities={"type": "object",
                                           "additionalProperties": BOOL},
                             auth={"type": "object"}, tls={"type": "object"}),
        "VersionInfo": _obj(("items",), items={"type": "array", "items": _obj(
            ("version", "base_uri", "vendor_info"), version=STR, base_uri=STR,
            vendor_info=_obj(("version", "name"), version=STR, name=STR),
            **{xv: _obj(("ros2",), ros2=ref("Ros2Versions"))})}),
        "Ros2Versions": _obj(
            ("ros_distro", "rclpy_version", "rmw_implementation", "rmw_version",
             "dds_implementation", "dds_version"),
            **{k: {"type": ["string", "null"]} for k in (
                "ros_distro", "rclpy_version", "rmw_implementation", "rmw_version",
                "dds_implementation", "dds_version")}),
        "HealthWarning": _obj(("code", "message", "entity_ids", "ros_node_fqns", "peer_names"),
                              code=STR, message=STR, entity_ids=STRS, ros_node_fqns=STRS,
                              peer_names=STRS),
        "Health": _obj(("status", "ready", "timestamp", "warning_schema_version", "warnings",
                        "discovery"),
                       status={"enum": ["healthy", "starting", "degraded"],
                               "description": "starting until discovery settled (see ready)"},
                       ready={**BOOL, "description": "entity lists are complete"},
                       timestamp={**INT, "description": "nanoseconds"},
                       warning_schema_version=INT,
                       warnings={"type": "array", "items": ref("HealthWarning")},
                       discovery=_obj(("mode", "strategy", "pipeline"), mode=STR, strategy=STR,
                                      pipeline={"type": "object"}),
                       peers={"type": "array", "items": _obj(("name", "url", "status"),
                                                             name=STR, url=STR, status=STR)},
                       **{f"{xv}-ros2": ref("Ros2Versions")}),
        "OpenApiDocument": _obj(("openapi", "info", "paths"), openapi=STR,
                                info={"type": "object"}, paths={"type": "object"},
                                components={"type": "object"}),
        "EntitySummary": entity,
        "EntityList": _list(ref("EntitySummary"), xv),
        "EntityDetail": {**entity, "properties": {**entity["properties"], "capabilities": {
            "type": "array", "items": _obj(("name", "href"), name=STR, href=STR)}}},
        "EntityStatus": _obj(("id", "status"), id=STR, status=STR),
        "EntitiesDeclaration": _obj(("format", "generation"), format=INT, generation=INT,
                                    gateway=STR, areas={"type": "array"},
                                    components={"type": "array"}, apps={"type": "array"},
                                    functions={"type": "array"}),
        "DataItem": _obj(("id", "name", "category"), id=STR, name=STR, category=STR),
        "DataList": _list(ref("DataItem"), xv),
        "DataRead": _obj(("id", "data"), id=STR, data=ANY),
        "Message": {"type": "object", "description": "Fields of the topic's message type"},
        "Object": {"type": "object"},
        "BeaconEvent": _obj(("data",), event=STR, data={
            **STR, "description": f"the ETag of /x-{vendor}-entities (federation/beacon.py)"}),
        "Operation": _obj(("id", "name"), id=STR, name=STR, type={"enum": ["service", "action"]},
                          asynchronous_execution=BOOL, proximity_proof_required=BOOL,
                          schema={"type": "object"}),
        "OperationList": _list(ref("Operation"), xv),
        "OperationDetail": _obj(("item",), item=ref("Operation")),
        "ExecutionRequest": _obj(
            timeout={"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 3600,
                     "description": "seconds (null or absent: service_call_timeout_sec)"},
            parameters={"type": ["object", "null"],
                        "description": "service request or action goal fields (null: none; an "
                                       "older form sends them at the top level instead)"}),
        "ServiceResult": _obj(("parameters",), parameters={"type": "object"}),
        "Execution": _obj(("id", "status"), id=STR, status=STR, capability=STR,
                          parameters={"type": "object"}, error={"type": "object"}),
        "ExecutionList": _list(_obj(("id",), id=STR), xv),
        "ExecutionControl": _obj(("capability",),
                                 capability={"enum": ["stop", "execute", "freeze", "reset"]},
                                 timeout=NUM, parameters={"type": "object"}),
        "Configuration": _obj(("id", "name", "value"), id=STR, name=STR, type=STR, value=ANY),
        "ConfigurationList": _list(ref("Configuration"), xv),
        "ConfigurationWrite": _obj(("value",), value=ANY),
        "ResetReport": _obj(("items",), items={"type": "array", "items": _obj(
            ("id", "status"), id=STR, status=INT, gateway=STR, node=STR, message=STR)},
            **{xv: {"type": "object"}}),
        "LogEntry": _obj(("id", "timestamp", "severity", "message"), id=STR, timestamp=STR,
                         severity={"enum": ["debug", "info", "warning", "error", "fatal"]},
                         message=STR, context={"type": "object"}),
        "LogList": _list(ref("LogEntry"), xv),
        "LogConfiguration": _obj(
            ("severity_filter", "max_entries"),
            severity_filter={"enum": ["debug", "info", "warning", "error", "fatal"]},
            max_entries={"type": "integer", "minimum": 1, "maximum": 10000}),
        "LogConfigurationWrite": _obj(
            severity_filter={"enum": ["debug", "info", "warning", "error", "fatal"]},
            max_entries={"type": "integer", "minimum": 1, "maximum": 10000}),
        "Fault": _obj(("fault_code", "severity", "message"), fault_code=STR, severity=STR,
                      message=STR, timestamp=STR, source=STR, **{xv: {"type": "object"}}),
        "FaultList": _list(ref("Fault"), xv),
        "FaultDetail": _obj(("item",), item=_obj(("code",), code=STR, fault_name=STR,
                                                 severity=INT, status={"type": "object"}),
                            environment_data={"type": "object"}),
        "FaultEvent": _obj(("data",), id={**STR, "description": "event id (Last-Event-ID)"},
                           event=STR, data={**STR, "description": "the event as JSON"},
                           retry=INT),
        "BulkDataCategories": _list(STR, xv),
        "BulkDataDescriptor": _obj(("id", "name"), id=STR, name=STR, mimetype=STR, size=INT,
                                   creation_date=STR, description=STR),
        "BulkDataList": _list(ref("BulkDataDescriptor"), xv),
        "BulkDataFile": {"type": "string", "format": "binary"},
        # Stored and served as JSON: numbers must fit 64 bits.
        "MetadataValue": {"anyOf": [
            {"type": "null"}, BOOL, STR,
            {"type": "number", "minimum": -(2 ** 63), "maximum": 2 ** 64 - 1},
            {"type": "array", "items": ref("MetadataValue")},
            {"type": "object", "additionalProperties": ref("MetadataValue")}]},
        "BulkDataUpload": {**_obj(("file",), file={"type": "string", "format": "binary"},
                                  description=STR,
                                  metadata={"type": "object",
                                            "additionalProperties": ref("MetadataValue"),
                                            "description": "arbitrary key-values, sent as a "
                                                           "JSON part"}),
                           # other fields are ignored; multipart names are header tokens
                           "propertyNames": {"pattern": "^[A-Za-z0-9_.-]+$"}},
    }


@dataclass(frozen=True)
class OperationDoc:
    """The documented contract of one route: success schemas per status, body, extra errors."""

    responses: dict[int, str | None]
    request: str | None = None
    request_type: str = "application/json"
    response_type: str = "application/json"
    errors: dict[int, str] = field(default_factory=dict)
    alternates: bool = False
    oauth: bool = False
    encoding: dict[str, Any] = field(default_factory=dict)  # multipart parts' media types


_E405 = {405: "Read-only entity type: upload and delete on components and apps only"}
_E413 = {413: "Body larger than the limit"}
# (method, path below the entity prefix, or the whole path for server routes) -> contract
ROUTE_DOCS: dict[tuple[str, str], OperationDoc] = {
    ("GET", "/"): OperationDoc({200: "Capabilities"}),
    ("GET", "/version-info"): OperationDoc({200: "VersionInfo"}),
    ("GET", "/health"): OperationDoc({200: "Health"}, errors={503: "Gateway degraded"}),
    ("GET", "/docs"): OperationDoc({200: "OpenApiDocument"}),
    ("GET", "/{entity_path}/docs"): OperationDoc({200: "OpenApiDocument"}),
    ("POST", "/auth/authorize"): OperationDoc(
        {200: "TokenPair"}, request="ClientCredentialsGrant", oauth=True),
    ("POST", "/auth/token"): OperationDoc({200: "TokenPair"}, request="RefreshTokenGrant",
                                          oauth=True),
    ("POST", "/auth/revoke"): OperationDoc({200: "Revoked"}, request="RevokeRequest",
                                           oauth=True),
    ("GET", "/x-vendor-entities"): OperationDoc({200: "EntitiesDeclaration"}),
    ("GET", "/areas"): OperationDoc({200: "EntityList"}),
    ("GET", "/components"): OperationDoc({200: "EntityList"}),
    ("GET", "/apps"): OperationDoc({200: "EntityList"}),
    ("GET", "/functions"): OperationDoc({200: "EntityList"}),
    ("GET", ""): OperationDoc({200: "EntityDetail"}),
    ("GET", "/status"): OperationDoc({200: "EntityStatus"}),
    ("GET", "/data"): OperationDoc({200: "DataList"}),
    ("GET", "/data/{data_id}"): OperationDoc({200: "DataRead"}),
    ("PUT", "/data/{data_id}"): OperationDoc({200: "DataRead"}, request="Message",
                                             errors=_E413),
    ("GET", "/operations"): OperationDoc({200: "OperationList"}),
    ("GET", "/operations/{op_id}"): OperationDoc({200: "OperationDetail"}),
    ("POST", "/operations/{op_id}/executions"): OperationDoc(
        {200: "ServiceResult", 202: "Execution"}, request="ExecutionRequest", alternates=True,
        errors={**_E413, 503: "Endpoint not on the graph", 504: "No answer in time"}),
    ("GET", "/operations/{op_id}/executions"): OperationDoc({200: "ExecutionList"}),
    ("GET", "/operations/{op_id}/executions/{exec_id}"): OperationDoc({200: "Execution"}),
    ("PUT", "/operations/{op_id}/executions/{exec_id}"): OperationDoc(
        {202: "Execution"}, request="ExecutionControl", errors=_E413),
    ("DELETE", "/operations/{op_id}/executions/{exec_id}"): OperationDoc({204: None}),
    ("GET", "/configurations"): OperationDoc({200: "ConfigurationList"},
                                             errors={503: "No node answered"}),
    ("DELETE", "/configurations"): OperationDoc(
        {204: None, 207: "ResetReport"}, alternates=True,
        errors={503: "A member node of this gateway is unavailable"}),
    ("GET", "/configurations/{param_name}"): OperationDoc(
        {200: "Configuration"}, errors={503: "Node unavailable"}),
    ("PUT", "/configurations/{param_name}"): OperationDoc(
        {200: "Configuration"}, request="ConfigurationWrite",
        errors={**_E413, 503: "Node unavailable"}),
    ("DELETE", "/configurations/{param_name}"): OperationDoc(
        {204: None}, errors={503: "Node unavailable"}),
    ("GET", "/logs"): OperationDoc({200: "LogList"}),
    ("GET", "/logs/configuration"): OperationDoc({200: "LogConfiguration"}),
    ("PUT", "/logs/configuration"): OperationDoc({204: None}, request="LogConfigurationWrite",
                                                 errors=_E413),
    ("GET", "/faults"): OperationDoc({200: "FaultList"}),
    ("DELETE", "/faults"): OperationDoc({204: None}),
    ("GET", "/faults/stream"): OperationDoc({200: "FaultEvent"},
                                            response_type="text/event-stream",
                                            errors={503: "Too many event streams"}),
    ("GET", "/faults/{fault_code}"): OperationDoc({200: "FaultDetail"}),
    ("DELETE", "/faults/{fault_code}"): OperationDoc({204: None, 200: "Object"},
                                                     alternates=True),
    ("GET", "/bulk-data"): OperationDoc({200: "BulkDataCategories"}),
    ("GET", "/bulk-data/{category}"): OperationDoc({200: "BulkDataList"}),
    ("GET", "/bulk-data/{category}/{bulk_id}"): OperationDoc(
        {200: "BulkDataFile", 206: "BulkDataFile"}, response_type="application/octet-stream",
        alternates=True, errors={416: "Range not satisfiable"}),
    ("POST", "/bulk-data/{category}"): OperationDoc(
        {201: "BulkDataDescriptor"}, request="BulkDataUpload",
        request_type="multipart/form-data", errors=_E413,
        encoding={"metadata": {"contentType": "application/json"}}),
    ("DELETE", "/bulk-data/{category}/{bulk_id}"): OperationDoc({204: None}),
}
# Read-only entity types: the spec's 405 is the documented answer.
READ_ONLY_DOCS: dict[str, OperationDoc] = {
    "POST": OperationDoc({}, request="BulkDataUpload", request_type="multipart/form-data",
                         errors=_E405),
    "DELETE": OperationDoc({}, errors=_E405),
}


def suffix(path: str) -> str:
    """A route path below its entity prefix (server-level paths unchanged)."""
    m = _ENTITY_PREFIX.match(path)
    return path[m.end():] if m else path


def doc_for(method: str, path: str, status: int, vendor: str,
            table: dict[tuple[str, str], OperationDoc] = ROUTE_DOCS) -> OperationDoc | None:
    """The contract row of a route, if the table has one."""
    if status == 405 and method in READ_ONLY_DOCS:
        return READ_ONLY_DOCS[method]
    key = suffix(path).replace(f"x-{vendor}", "x-vendor")
    return table.get((method, key)) or table.get((method, path.replace(
        f"x-{vendor}", "x-vendor")))
