"""Wire profiles (pure) of locks, scripts, absent features and entity vendor keys."""

from __future__ import annotations

import pytest

from gateway.locks.rules import CONFLICT, REQUIRED, Lock, LockError
from gateway.model.entities import Entity
from tests.wire_bundle import make_wire

LOCK = Lock("lock_1", "apps", "a1", "client-a", ("faults",), 1_700_000_060.0)


@pytest.mark.parametrize("profile", ["spec", "medkit"])
def test_lock_refusals_carry_the_reference_codes(profile: str) -> None:
    wire = make_wire(profile, "vendor").locks
    err = wire.error(LockError(CONFLICT, "locked", LOCK, "a1", "faults"))
    assert (err.status, err.error_code) == (409, "lock-broken")
    assert err.parameters is not None
    assert {k: err.parameters[k] for k in ("entity_id", "collection", "lock_id")} == {
        "entity_id": "a1", "collection": "faults", "lock_id": "lock_1"}
    err = wire.error(LockError(REQUIRED, "needs a lock", None, "a1", "configurations"))
    assert (err.status, err.error_code) == (409, "invalid-request")
    assert err.parameters == {"entity_id": "a1", "collection": "configurations",
                              "details": "A lock must be held to modify this resource "
                                         "collection"}
    body = wire.lock(LOCK, "client-a")
    assert body == {"id": "lock_1", "owned": True, "scopes": ["faults"],
                    "lock_expiration": "2023-11-14T22:14:20.000Z"}
    assert wire.lock(LOCK, None)["owned"] is False


def test_script_codes_per_profile() -> None:
    spec, medkit = make_wire("spec", "vendor").scripts, make_wire("medkit", "medkit").scripts
    assert spec.error(409, "script-managed", "m").body("vendor") == {
        "error_code": "vendor-error", "message": "m", "vendor_code": "script-managed"}
    for ours, theirs in (("script-managed", "x-medkit-managed-script"),
                         ("script-concurrency-limit", "x-medkit-concurrency-limit"),
                         ("script-file-too-large", "x-medkit-script-too-large"),
                         ("script-running", "x-medkit-script-running")):
        body = medkit.error(409, ours, "m", script_id="s").body("medkit")
        assert body["vendor_code"] == theirs and body["error_code"] == "vendor-error"
        assert body["parameters"] == {"script_id": "s"}


@pytest.mark.parametrize("profile", ["spec", "medkit"])
def test_absent_feature_in_the_reference_words(profile: str) -> None:
    err = make_wire(profile, "vendor").errors.feature_absent("updates-backend", "load one",
                                                             entity_id="x")
    assert (err.status, err.error_code) == (501, "not-implemented")
    assert err.message == "Software updates backend not configured"
    assert err.parameters == {"feature": "updates", "details": "load one", "entity_id": "x"}


def test_nested_unknown_entity_names_the_type() -> None:
    err = make_wire("medkit", "medkit").errors.unknown_entity("areas", "x", nested=True)
    assert (err.status, err.error_code, err.message) == (404, "entity-not-found",
                                                         "Area not found")
    assert err.parameters == {"entity_id": "x", "area_id": "x"}
    assert make_wire("medkit", "medkit").errors.unknown_entity("areas", "x").message == \
        "Entity not found"


def test_entity_vendor_keys() -> None:
    wire = make_wire("spec", "vendor").entities
    comp = Entity("components", "door", "Door", area="doors", parent="body",
                  depends_on=["ecu"], namespace="/body", attrs={"type": "module",
                                                                "fqn": "/body/door"})
    assert wire.ref_vendor(comp, {}) == {
        "ros2": {"node": "/body/door", "namespace": "/body"}, "type": "module",
        "area": "doors", "parentComponentId": "body", "dependsOn": ["ecu"]}
    host = Entity("components", "host", "host", source="runtime")
    assert wire.ref_vendor(host, {}) == {}
    area = Entity("areas", "doors", "Doors", namespace="/body/door", parent="body")
    assert wire.ref_vendor(area, {}) == {"ros2": {"namespace": "/body/door"},
                                         "parent_area_id": "body"}
    func = Entity("functions", "f", "F", hosts=["a1", "a2"])
    assert wire.ref_vendor(func, {}) == {"hosts": ["a1", "a2"]}
