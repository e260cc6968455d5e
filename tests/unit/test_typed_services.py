"""Services are typed fields of GatewayState: no string-keyed bag of services comes back."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from gateway.state import GatewayState

ROOT = Path(__file__).resolve().parents[2]


def test_gateway_state_has_no_bag_of_services() -> None:
    names = {f.name for f in dataclasses.fields(GatewayState)}
    assert "extras" not in names
    assert {"faults", "rosout", "push", "plugins", "federation", "forwarder", "drain"} <= names


def test_no_module_reads_an_extras_bag() -> None:
    found = []
    for pkg in ("gateway", "federation", "recorder"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Attribute) and node.attr == "extras":
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == [], "state.extras is gone: give the service a typed GatewayState field: " \
        + ", ".join(found)
