"""Typed contract of the updates, push (subscriptions, triggers, fault triggers) and manifest routes."""

from __future__ import annotations

from typing import Any

from .schemas import BOOL, INT, NUM, STR, STRS, TEXT, OperationDoc, _obj, ref

_INTERVAL = {"enum": ["fast", "normal", "slow"], "description": "50, 200 or 500 ms"}
_DURATION = {"type": "integer", "minimum": 1,
             "description": "seconds (at most sse.max_duration_sec)"}
_LIFETIME = {"type": "integer", "minimum": 1, "description": "seconds"}
_RESOURCE = {**TEXT, "description": "URI of the observed collection of this entity"}
_CONDITION = {**_obj(("condition_type",),
                     condition_type={"enum": ["OnChange", "OnChangeTo", "EnterRange",
                                              "LeaveRange"]},
                     target_value={}, lower_bound=NUM, upper_bound=NUM)}
_UPDATE_STATUS = {"enum": ["pending", "inProgress", "completed", "failed"]}
_UPDATE_PACKAGE = {
    **_obj(("sha256",), sha256={"type": "string", "pattern": "^[0-9a-fA-F]{64}$"},
           path={**TEXT, "description": "a file under plugins.update_provider.package_dirs"},
           bulk_data={**TEXT, "description": "an upload: <category>/<id> or its URI"},
           install_as={**TEXT, "description": "install name (default: the id)"},
           post_install={**TEXT, "description": "script path inside the package"}),
    "description": "the file the update_provider plugin installs: path or bulk_data"}


def components(vendor: str) -> dict[str, Any]:
    """Component schemas of these routes; vendor keys use the configured vendor word."""
    xv = f"x-{vendor}"
    subscription = _obj(("id", "observed_resource", "event_source", "protocol", "interval",
                         "duration"),
                        id=STR, observed_resource=STR, event_source=STR,
                        protocol={"enum": ["sse"]}, interval=STR, duration=INT,
                        **{xv: {"type": "object"}})
    trigger = _obj(("id", "status", "observed_resource", "event_source", "protocol",
                    "trigger_condition"),
                   id=STR, status=STR, observed_resource=STR, event_source=STR,
                   protocol={"enum": ["sse"]}, trigger_condition={"type": "object"},
                   multishot=BOOL, persistent=BOOL, lifetime=INT, path=STR,
                   log_settings={"type": "object"}, **{xv: {"type": "object"}})
    rule = _obj(("id", "data_name", "operator", "threshold", "fault_code", "severity",
                 "active"),
                id=STR, data_name=STR, operator={"enum": [">", "<", ">=", "<=", "=="]},
                threshold=NUM, fault_code=STR,
                severity={"enum": ["INFO", "WARNING", "ERROR", "CRITICAL"]}, active=BOOL,
                path=STR)
    return {
        "UpdateList": _obj(("items",), items=STRS),
        "UpdateRegistration": {**_obj(("id",), id={"type": "string",
                                                   "pattern": "^[A-Za-z0-9_-]+$"},
                                      update_name=STR, automated=BOOL,
                                      origins={**STRS, "description": "e.g. remote, proximity"},
                                      duration={**NUM, "description": "seconds"},
                                      size={**NUM, "description": "bytes"},
                                      updated_components=STRS, affected_components=STRS,
                                      package=_UPDATE_PACKAGE),
                               "description": "package metadata, stored as given (other "
                                              "fields too); without `package` the shipped "
                                              "provider installs nothing"},
        "UpdateCreated": _obj(("id",), id=STR),
        "UpdatePackage": {"type": "object", "description": "metadata the provider holds"},
        "UpdateStatus": _obj(("status",), status=_UPDATE_STATUS,
                             progress={"type": "integer", "minimum": 0, "maximum": 100},
                             sub_progress={"type": "array", "items": _obj(
                                 ("name", "progress"), name=STR, progress=INT)},
                             error=_obj(("error_code", "message"), error_code=STR,
                                        message=STR),
                             **{xv: _obj(("phase",), phase=STR)}),
        "CyclicSubscriptionCreate": _obj(("resource", "interval"), resource=_RESOURCE,
                                         interval=_INTERVAL, duration=_DURATION,
                                         protocol={"enum": ["sse"]}),
        "CyclicSubscriptionUpdate": {**_obj(interval=_INTERVAL, duration=_DURATION),
                                     "minProperties": 1},
        "CyclicSubscription": subscription,
        "CyclicSubscriptionList": _obj(("items",), items={"type": "array",
                                                          "items": ref("CyclicSubscription")}),
        "CyclicSubscriptionEvent": _obj(("data",), id=STR, event=STR,
                                        data={**STR, "description": "JSON: timestamp, payload"}),
        "TriggerCreate": _obj(("resource", "trigger_condition"), resource=_RESOURCE,
                              trigger_condition=_CONDITION, protocol={"enum": ["sse"]},
                              path={**STR, "description": "JSON pointer into the payload"},
                              lifetime=_LIFETIME, multishot=BOOL, persistent=BOOL,
                              log_settings=_obj(severity={"enum": [
                                  "debug", "info", "warning", "error", "fatal"]},
                                  marker=STR)),
        "TriggerUpdate": _obj(("lifetime",), lifetime=_LIFETIME),
        "Trigger": trigger,
        "TriggerList": _obj(("items",), items={"type": "array", "items": ref("Trigger")}),
        "TriggerEvent": _obj(("data",), id=STR, event=STR,
                             data={**STR, "description": "JSON: timestamp, payload"}),
        "FaultTriggerCreate": _obj(("data_name", "operator", "threshold", "fault_code"),
                                   data_name={**TEXT, "description": "topic to watch"},
                                   operator={"enum": [">", "<", ">=", "<=", "=="]},
                                   threshold=NUM, fault_code=TEXT,
                                   severity={"enum": ["INFO", "WARNING", "ERROR", "CRITICAL"]},
                                   active=BOOL, path=STR),
        "FaultTrigger": rule,
        "FaultTriggerList": _obj(("items",), items={"type": "array",
                                                    "items": ref("FaultTrigger")}),
        "ManifestStatus": _obj(("active", "path", "mode", "validation"), active=BOOL,
                               path=STR, mode=STR,
                               validation=_obj(("is_valid", "error_count", "warning_count"),
                                               is_valid=BOOL, error_count=INT,
                                               warning_count=INT,
                                               warnings={"type": "array"}),
                               metadata={"type": "object"}, manifest_version=STR,
                               entity_counts={"type": "object"}, files=STRS,
                               loaded_at_ns=INT, reloads=INT),
        "PluginResponse": {"type": "object",
                           "description": "plugin-defined body (the plugin declares none)"},
        "PluginRequest": {"type": "object",
                          "description": "plugin-defined body (the plugin declares none)"},
    }


_E409 = {409: "An operation is in progress on this package"}
_E503 = {503: "Too many event streams"}
ROUTE_DOCS: dict[tuple[str, str], OperationDoc] = {
    ("GET", "/updates"): OperationDoc({200: "UpdateList"}),
    ("POST", "/updates"): OperationDoc({201: "UpdateCreated"}, request="UpdateRegistration"),
    ("GET", "/updates/{update_id}"): OperationDoc({200: "UpdatePackage"}),
    ("DELETE", "/updates/{update_id}"): OperationDoc({204: None}, errors=_E409),
    ("PUT", "/updates/{update_id}/prepare"): OperationDoc({202: None}, errors=_E409),
    ("PUT", "/updates/{update_id}/execute"): OperationDoc({202: None}, errors=_E409),
    ("PUT", "/updates/{update_id}/automated"): OperationDoc({202: None}, errors=_E409),
    ("GET", "/updates/{update_id}/status"): OperationDoc({200: "UpdateStatus"}),
    ("GET", "/cyclic-subscriptions"): OperationDoc({200: "CyclicSubscriptionList"}),
    ("POST", "/cyclic-subscriptions"): OperationDoc(
        {201: "CyclicSubscription"}, request="CyclicSubscriptionCreate",
        errors={503: "Too many subscriptions (sse.max_subscriptions)"}),
    ("GET", "/cyclic-subscriptions/{subscription_id}"): OperationDoc(
        {200: "CyclicSubscription"}),
    ("PUT", "/cyclic-subscriptions/{subscription_id}"): OperationDoc(
        {200: "CyclicSubscription"}, request="CyclicSubscriptionUpdate"),
    ("DELETE", "/cyclic-subscriptions/{subscription_id}"): OperationDoc({204: None}),
    ("GET", "/cyclic-subscriptions/{subscription_id}/events"): OperationDoc(
        {200: "CyclicSubscriptionEvent"}, response_type="text/event-stream", errors=_E503),
    ("GET", "/triggers"): OperationDoc({200: "TriggerList"}),
    ("POST", "/triggers"): OperationDoc({201: "Trigger"}, request="TriggerCreate",
                                        errors={503: "Too many triggers, or not stored"}),
    ("GET", "/triggers/{trigger_id}"): OperationDoc({200: "Trigger"}),
    ("PUT", "/triggers/{trigger_id}"): OperationDoc({200: "Trigger"}, request="TriggerUpdate"),
    ("DELETE", "/triggers/{trigger_id}"): OperationDoc({204: None}),
    ("GET", "/triggers/{trigger_id}/events"): OperationDoc(
        {200: "TriggerEvent"}, response_type="text/event-stream", errors=_E503),
    ("GET", "/fault-triggers"): OperationDoc({200: "FaultTriggerList"}),
    ("POST", "/fault-triggers"): OperationDoc(
        {201: "FaultTrigger"}, request="FaultTriggerCreate",
        errors={409: "fault_code raised by another rule",
                503: "The fault-trigger engine is not running yet"}),
    ("GET", "/fault-triggers/{trigger_id}"): OperationDoc({200: "FaultTrigger"}),
    ("DELETE", "/fault-triggers/{trigger_id}"): OperationDoc({204: None}),
    ("GET", "/manifest/status"): OperationDoc({200: "ManifestStatus"}),
    **{("PUT", f"/status/{transition}"): OperationDoc(
        {202: "LifecycleTransition"},
        errors={409: "The node's state refuses this transition",
                503: "The node or its lifecycle services are unavailable"})
       for transition in ("start", "restart", "force-restart", "shutdown", "force-shutdown")},
    **{("GET", f"/{kind}/docs"): OperationDoc({200: "OpenApiDocument"})
       for kind in ("areas", "components", "apps", "functions")},
}
