"""Routes of features this build does not serve yet: each answers 501 naming the feature.

A feature that gets built replaces its rows here by registering real handlers (and adding
its name to the state's features); the table keeps routing, roles and /docs complete now.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..errors import not_implemented
from ..http.routes import Registry
from ..http.state import state_of
from ..model.roles import Role
from ..wire.errors import FEATURE_ABSENT

ALL = ("areas", "components", "apps", "functions")
CA = ("components", "apps")
CAF = ("components", "apps", "functions")
VIEW, OPER, CONF = Role.VIEWER, Role.OPERATOR, Role.CONFIGURATOR

# (feature, method, suffix, entity types, role); suffix "" rows are server-level paths.
ENTITY_ROWS: tuple[tuple[str, str, str, tuple[str, ...], Role], ...] = (
    ("operations", "GET", "/operations", ALL, VIEW),
    ("operations", "GET", "/operations/{op_id}", ALL, VIEW),
    ("operations", "POST", "/operations/{op_id}/executions", ALL, OPER),
    ("operations", "GET", "/operations/{op_id}/executions", ALL, VIEW),
    ("operations", "GET", "/operations/{op_id}/executions/{exec_id}", ALL, VIEW),
    ("operations", "PUT", "/operations/{op_id}/executions/{exec_id}", ALL, OPER),
    ("operations", "DELETE", "/operations/{op_id}/executions/{exec_id}", ALL, OPER),
    ("configurations", "GET", "/configurations", ALL, VIEW),
    ("configurations", "DELETE", "/configurations", ALL, CONF),
    ("configurations", "GET", "/configurations/{param_name}", ALL, VIEW),
    ("configurations", "PUT", "/configurations/{param_name}", ALL, CONF),
    ("configurations", "DELETE", "/configurations/{param_name}", ALL, CONF),
    ("faults", "GET", "/faults", ALL, VIEW),
    ("faults", "DELETE", "/faults", ALL, OPER),
    ("faults", "GET", "/faults/{fault_code}", ALL, VIEW),
    ("faults", "DELETE", "/faults/{fault_code}", ALL, OPER),
    ("logs", "GET", "/logs", ALL, VIEW),
    ("logs", "GET", "/logs/configuration", ALL, VIEW),
    ("logs", "PUT", "/logs/configuration", ALL, CONF),
    ("bulk-data", "GET", "/bulk-data", ALL, VIEW),
    ("bulk-data", "GET", "/bulk-data/{category}", ALL, VIEW),
    ("bulk-data", "GET", "/bulk-data/{category}/{bulk_id}", ALL, VIEW),
    ("bulk-data", "POST", "/bulk-data/{category}", CA, OPER),
    ("bulk-data", "DELETE", "/bulk-data/{category}/{bulk_id}", CA, OPER),
    ("data-categories", "GET", "/data-categories", ALL, VIEW),
    ("data-groups", "GET", "/data-groups", ALL, VIEW),
    ("cyclic-subscriptions", "GET", "/cyclic-subscriptions", CAF, VIEW),
    ("cyclic-subscriptions", "POST", "/cyclic-subscriptions", CAF, OPER),
    ("cyclic-subscriptions", "GET", "/cyclic-subscriptions/{subscription_id}", CAF, VIEW),
    ("cyclic-subscriptions", "PUT", "/cyclic-subscriptions/{subscription_id}", CAF, OPER),
    ("cyclic-subscriptions", "DELETE", "/cyclic-subscriptions/{subscription_id}", CAF, OPER),
    ("cyclic-subscriptions", "GET", "/cyclic-subscriptions/{subscription_id}/events", CAF,
     VIEW),
    ("triggers", "GET", "/triggers", ALL, VIEW),
    ("triggers", "POST", "/triggers", ALL, OPER),
    ("triggers", "GET", "/triggers/{trigger_id}", ALL, VIEW),
    ("triggers", "PUT", "/triggers/{trigger_id}", ALL, OPER),
    ("triggers", "DELETE", "/triggers/{trigger_id}", ALL, OPER),
    ("triggers", "GET", "/triggers/{trigger_id}/events", ALL, VIEW),
    ("scripts", "GET", "/scripts", CA, VIEW),
    ("scripts", "POST", "/scripts", CA, CONF),
    ("scripts", "GET", "/scripts/{script_id}", CA, VIEW),
    ("scripts", "DELETE", "/scripts/{script_id}", CA, CONF),
    ("scripts", "POST", "/scripts/{script_id}/executions", CA, OPER),
    ("scripts", "GET", "/scripts/{script_id}/executions", CA, VIEW),
    ("scripts", "GET", "/scripts/{script_id}/executions/{execution_id}", CA, VIEW),
    ("scripts", "PUT", "/scripts/{script_id}/executions/{execution_id}", CA, OPER),
    ("scripts", "DELETE", "/scripts/{script_id}/executions/{execution_id}", CA, OPER),
    ("locks", "GET", "/locks", CA, VIEW),
    ("locks", "POST", "/locks", CA, OPER),
    ("locks", "GET", "/locks/{lock_id}", CA, VIEW),
    ("locks", "PUT", "/locks/{lock_id}", CA, OPER),
    ("locks", "DELETE", "/locks/{lock_id}", CA, OPER),
    ("status", "GET", "/status", CA, VIEW),
    ("lifecycle", "PUT", "/status/start", CA, OPER),
    ("lifecycle", "PUT", "/status/restart", CA, OPER),
    ("lifecycle", "PUT", "/status/force-restart", CA, OPER),
    ("lifecycle", "PUT", "/status/shutdown", CA, CONF),
    ("lifecycle", "PUT", "/status/force-shutdown", CA, CONF),
    ("fault-triggers", "GET", "/fault-triggers", ("apps",), VIEW),
    ("fault-triggers", "POST", "/fault-triggers", ("apps",), OPER),
    ("fault-triggers", "DELETE", "/fault-triggers/{trigger_id}", ("apps",), OPER),
)
SERVER_ROWS: tuple[tuple[str, str, str, Role], ...] = (
    ("faults", "GET", "/faults", VIEW),
    ("faults", "DELETE", "/faults", OPER),
    ("faults", "GET", "/faults/stream", VIEW),
)
# Features answered 501 always (spec: data-categories and data-groups).
ALWAYS_501 = frozenset({"data-categories", "data-groups"})
# The reference implementation's wording where the spec shows none (medkit-wire.md section 13).
MESSAGES = FEATURE_ABSENT


def _stub(feature: str) -> Any:
    async def unbuilt(request: web.Request) -> web.StreamResponse:
        if request.method in ("GET", "HEAD") and request.path.endswith("/docs"):
            # `<collection>/docs` on an item route is the scoped document, not an item id
            return await state_of(request).docs_route.handler(request)
        if feature in MESSAGES:
            raise not_implemented(feature, MESSAGES[feature])
        if feature in ALWAYS_501:
            raise not_implemented(feature, f"'{feature}' is not supported by this gateway")
        raise not_implemented(
            feature, f"The '{feature}' feature is not available in this gateway build")

    unbuilt.__doc__ = f"{feature} (not available: 501)"
    return unbuilt


def register(reg: Registry, built: set[str]) -> None:
    """Declare the 501 routes of every feature not in `built`."""
    for feature, method, suffix, types, role in ENTITY_ROWS:
        if feature in built:
            continue
        reg.entity_routes(method, suffix, _stub(feature), types=types, role=role,
                          feature=feature, extra={"stub": True})
    for feature, method, path, role in SERVER_ROWS:
        if feature in built:
            continue
        reg.add(method, path, _stub(feature), role=role, feature=feature, tag=feature,
                extra={"stub": True})
