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
from ..wire.errors import FEATURE_ABSENT

ALL = ("areas", "components", "apps", "functions")
CA = ("components", "apps")
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
    ("status", "GET", "/status", CA, VIEW),
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
    async def unbuilt(request: web.Request) -> web.Response:
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
