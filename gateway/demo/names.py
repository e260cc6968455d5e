"""Demo node names per wire profile: the medkit profile runs the reference's names."""

from __future__ import annotations

from collections.abc import Iterable

from .robot import NODES

# The reference's integration tests (test_lifecycle) address its self-activating lifecycle
# demo node as `managed_lifecycle_active`; the spec profile keeps this project's name.
RENAMES: dict[str, dict[str, str]] = {
    "spec": {},
    "medkit": {"managed_lifecycle": "managed_lifecycle_active"},
}


def demo_nodes(profile: str, nodes: Iterable[str] = NODES) -> list[str]:
    """The demo robot's node names under the wire profile `profile`."""
    renames = RENAMES.get(profile, {})
    return [renames.get(name, name) for name in nodes]
