"""Routes of features this build does not serve yet: each answers 501 naming the feature.

A feature that gets built replaces its rows here by registering real handlers (and adding
its name to the state's features); the table keeps routing, roles and /docs complete now.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..auth.roles import Role
from ..http.errors import not_implemented
from ..http.routes import Registry

ALL = ("areas", "components", "apps", "functions")
CA = ("components", "apps")
V, O, C = Role.VIEWER, Role.OPERATOR, Role.CONFIGURATOR

# (feature, method, suffix, entity types, role); suffix "" rows are server-level paths.
ENTITY_ROWS: tuple[tuple[str, str, str, tuple[str, ...], Role], ...] = (
    ("operations", "GET", "/operations", ALL, V),
    ("operations", "GET", "/operations/{op_id}", ALL, V),
    ("operations", "POST", "/operations/{op_id}/executions", ALL, O),
    ("operations", "GET", "/operations/{op_id}/executions", ALL, V),
    ("operations", "GET", "/operations/{op_id}/executions/{exec_id}", ALL, V),
    ("operations", "PUT", "/operations/{op_id}/executions/{exec_id}", ALL, O),
    ("operations", "DELETE", "/operations/{op_id}/executions/{exec_id}", ALL, O),
    ("configurations", "GET", "/configurations", ALL, V),
    ("configurations", "DELETE", "/configurations", ALL, C),
    ("configurations", "GET", "/configurations/{param_name}", ALL, V),
    ("configurations", "PUT", "/configurations/{param_name}", ALL, C),
    ("configurations", "DELETE", "/configurations/{param_name}", ALL, C),
    ("faults", "GET", "/faults", ALL, V),
    ("faults", "DELETE", "/faults", ALL, O),
    ("faults", "GET", "/faults/{fault_code}", ALL, V),
    ("faults", "DELETE", "/faults/{fault_code}", ALL, O),
    ("logs", "GET", "/logs", ALL, V),
    ("logs", "GET", "/logs/configuration", ALL, V),
    ("logs", "PUT", "/logs/configuration", ALL, C),
    ("bulk-data", "GET", "/bulk-data", ALL, V),
    ("bulk-data", "GET", "/bulk-data/{category}", ALL, V),
    ("bulk-data", "GET", "/bulk-data/{category}/{bulk_id}", ALL, V),
    ("bulk-data", "POST", "/bulk-data/{category}", CA, O),
    ("bulk-data", "DELETE", "/bulk-data/{category}/{bulk_id}", CA, O),
    ("data-categories", "GET", "/data-categories", ALL, V),
    ("data-groups", "GET", "/data-groups", ALL, V),
    ("cyclic-subscriptions", "GET", "/cyclic-subscriptions", ("components", "apps",
                                                              "functions"), V),
    ("cyclic-subscriptions", "POST", "/cyclic-subscriptions", ("components", "apps",
                                                               "functions"), O),
    ("triggers", "GET", "/triggers", ALL, V),
    ("triggers", "POST", "/triggers", ALL, O),
    ("scripts", "GET", "/scripts", CA, V),
    ("scripts", "POST", "/scripts", CA, C),
    ("locks", "GET", "/locks", CA, V),
    ("locks", "POST", "/locks", CA, O),
    ("status", "GET", "/status", CA, V),
    ("lifecycle", "PUT", "/status/restart", CA, O),
    ("lifecycle", "PUT", "/status/shutdown", CA, C),
    ("lifecycle", "PUT", "/status/force-shutdown", CA, C),
    ("fault-triggers", "GET", "/fault-triggers", ("apps",), V),
    ("fault-triggers", "POST", "/fault-triggers", ("apps",), O),
    ("graph", "GET", "/x-vendor-graph", ("functions",), V),
)
SERVER_ROWS: tuple[tuple[str, str, str, Role], ...] = (
    ("faults", "GET", "/faults", V),
    ("faults", "DELETE", "/faults", O),
    ("faults", "GET", "/faults/stream", V),
    ("updates", "GET", "/updates", V),
    ("updates", "POST", "/updates", C),
    ("updates", "GET", "/updates/{update_id}", V),
    ("updates", "DELETE", "/updates/{update_id}", C),
    ("updates", "GET", "/updates/{update_id}/status", V),
    ("manifest", "GET", "/manifest/status", V),
)
# Features answered 501 always (spec: data-categories and data-groups).
ALWAYS_501 = frozenset({"data-categories", "data-groups"})


def _stub(feature: str) -> Any:
    async def unbuilt(request: web.Request) -> web.Response:
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
