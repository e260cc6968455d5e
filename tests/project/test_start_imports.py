"""Modules a gateway does not hold from start: loaded on first use (USS, issue 17)."""

from __future__ import annotations

import subprocess
import sys

_CHILD = """
import sys
from gateway.app import build_registry
from gateway.http.openapi import build
from gateway.ros.graph import snapshot
from gateway.push import fault_engine
reg = build_registry("vendor", set())
print(sorted(m for m in ("gateway.http.schemas", "gateway.http.feature_schemas", "rclpy.action",
                                  "difflib")
             if m in sys.modules))
doc = build(reg, vendor="vendor", version="0", with_roles=False)
print("gateway.http.schemas" in sys.modules, len(doc["paths"]) > 50)
"""


def test_route_contracts_rclpy_action_and_difflib_load_on_use() -> None:
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                         timeout=120, check=True).stdout.splitlines()
    assert out == ["[]", "True True"]
