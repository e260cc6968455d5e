"""Lock rules without sockets: acquire, break, extend, release, checks, expiry, resolution."""

from __future__ import annotations

import pytest

from gateway.locks.rules import (
    CONFLICT,
    EXISTS,
    INVALID,
    NOT_BREAKABLE,
    NOT_FOUND,
    NOT_OWNER,
    REQUIRED,
    LockConfig,
    LockError,
    LockManager,
    Target,
    check_client_id,
    resolve_config,
)
from gateway.model import runids

T0 = 1_000_000.0


def manager(**per_entity: LockConfig) -> LockManager:
    return LockManager(lambda kind, eid: per_entity.get(eid, LockConfig(max_expiration=100.0)))


def refused(kind: str, fn: object, *args: object) -> LockError:
    with pytest.raises(LockError) as info:
        fn(*args)  # type: ignore[operator]
    assert info.value.kind == kind, info.value.message
    return info.value


def app_target(collection: str = "data") -> Target:
    return Target("apps", "a1", collection, [("components", "c1")])


def test_acquire_then_second_client_refused_then_break() -> None:
    m = manager()
    lock, replaced = m.acquire("apps", "a1", "A", None, 30, False, T0)
    assert (lock.scopes, lock.expires_at, replaced) == ((), T0 + 30, None)
    assert lock.id == f"lock_{runids.BOOT_TAG}_{lock.id.rsplit('_', 1)[1]}"  # never reused
    err = refused(EXISTS, m.acquire, "apps", "a1", "B", None, 30, False, T0 + 1)
    assert err.lock is lock
    new, old = m.acquire("apps", "a1", "B", ["data"], 30, True, T0 + 2)
    assert old is lock and new.client_id == "B" and new.id != lock.id
    assert m.active("apps", "a1", T0 + 2) is new


def test_break_refused_on_non_breakable_entity() -> None:
    m = manager(a1=LockConfig(breakable=False))
    m.acquire("apps", "a1", "A", None, 30, False, T0)
    refused(NOT_BREAKABLE, m.acquire, "apps", "a1", "B", None, 30, True, T0)


def test_expired_lock_is_replaced_silently_and_stops_counting() -> None:
    m = manager()
    m.acquire("apps", "a1", "A", None, 10, False, T0)
    m.check(app_target(), "B", T0 + 10)  # expired at T0+10: no conflict
    lock, replaced = m.acquire("apps", "a1", "B", None, 10, False, T0 + 11)
    assert replaced is None and lock.client_id == "B"


def test_expiration_validated_and_capped() -> None:
    m = manager()
    for bad in (0, -1, "10", True, None, float("nan")):
        refused(INVALID, m.acquire, "apps", "a1", "A", None, bad, False, T0)
    lock, _ = m.acquire("apps", "a1", "A", None, 10_000, False, T0)
    assert lock.expires_at == T0 + 100.0  # the entity's maximum


def test_scopes_validated() -> None:
    m = manager()
    err = refused(INVALID, m.acquire, "apps", "a1", "A", ["data", "nope"], 10, False, T0)
    assert "nope" in err.message and "configurations" in err.message
    lock, _ = m.acquire("apps", "a1", "A", ["faults", "data", "faults"], 10, False, T0)
    assert lock.scopes == ("faults", "data")


def test_areas_cannot_be_locked() -> None:
    refused(INVALID, manager().acquire, "areas", "x", "A", None, 10, False, T0)


def test_extend_and_release_need_the_owner() -> None:
    m = manager()
    lock, _ = m.acquire("apps", "a1", "A", None, 10, False, T0)
    refused(NOT_OWNER, m.extend, "apps", "a1", lock.id, "B", 10, T0)
    refused(NOT_OWNER, m.release, "apps", "a1", lock.id, "B", T0)
    refused(NOT_FOUND, m.extend, "apps", "a1", "lock_9", "A", 10, T0)
    refused(NOT_FOUND, m.get, "components", "a1", lock.id)  # another entity
    assert m.extend("apps", "a1", lock.id, "A", 50, T0 + 5).expires_at == T0 + 55
    refused(INVALID, m.extend, "apps", "a1", lock.id, "A", 0, T0 + 5)
    refused(NOT_FOUND, m.extend, "apps", "a1", lock.id, "A", 5, T0 + 56)  # expired
    lock2, _ = m.acquire("apps", "a1", "A", None, 10, False, T0 + 60)
    assert m.release("apps", "a1", lock2.id, "A", T0 + 61) is lock2
    assert m.locks == {}


def test_conflict_from_the_entity_and_its_component() -> None:
    m = manager()
    m.acquire("components", "c1", "A", ["data"], 10, False, T0)
    err = refused(CONFLICT, m.check, app_target("data"), "B", T0)
    assert err.entity_id == "c1" and err.collection == "data" and err.lock is not None
    refused(CONFLICT, m.check, app_target("data"), None, T0)  # no header: another client
    m.check(app_target("data"), "A", T0)  # the holder itself
    m.check(app_target("configurations"), "B", T0)  # not covered
    # locks never propagate downward or sideways
    m.check(Target("components", "c1", "data", []), "A", T0)
    m.acquire("apps", "a2", "A", None, 10, False, T0)
    m.check(Target("components", "c2", "data", []), "B", T0)
    m.check(app_target("faults"), "B", T0)


def test_with_a_token_the_owner_is_the_subject_and_the_client_id() -> None:
    m = manager()
    lock, _ = m.acquire("apps", "a1", "A", None, 10, False, T0, subject="alice")
    refused(NOT_OWNER, m.release, "apps", "a1", lock.id, "A", T0, "mallory")  # same client id
    refused(NOT_OWNER, m.extend, "apps", "a1", lock.id, "A", 10, T0, "mallory")
    refused(CONFLICT, m.check, app_target("data"), "A", T0, "mallory")
    m.check(app_target("data"), "A", T0, "alice")
    refused(CONFLICT, m.check, app_target("data"), "B", T0, "alice")  # same subject, other id
    assert lock.held_by("A", "alice") and not lock.held_by("A", "")
    assert lock.held_by("A", None)  # a read without a token: the client id alone
    assert m.release("apps", "a1", lock.id, "A", T0, "alice") is lock


def test_required_scopes_of_the_entities_between_a_parent_and_its_member() -> None:
    m = manager(c1=LockConfig(required_scopes=("configurations",)))
    through_area = Target("apps", "a1", "configurations", [("components", "c1")],
                          [("apps", "a1"), ("components", "c1")])
    err = refused(REQUIRED, m.check, through_area, "A", T0)
    assert err.entity_id == "c1" and "component 'c1'" in err.message
    m.check(app_target("configurations"), "A", T0)  # the app itself: its own rules only
    m.acquire("components", "c1", "A", ["configurations"], 10, False, T0)
    m.check(through_area, "A", T0)
    err = refused(REQUIRED, m.check, through_area, "B", T0)
    assert err.lock is not None and err.lock.client_id == "A"


def test_lock_ids_are_never_reused() -> None:
    ids = {manager().acquire("apps", "a1", "A", None, 10, False, T0)[0].id for _ in range(50)}
    assert len(ids) == 50 and all(runids.BOOT_TAG in i for i in ids)


def test_required_scope_needs_own_covering_lock_on_the_entity() -> None:
    m = manager(a1=LockConfig(required_scopes=("configurations",)))
    err = refused(REQUIRED, m.check, app_target("configurations"), "A", T0)
    assert err.collection == "configurations" and "required" in err.message
    m.check(app_target("data"), "A", T0)
    m.acquire("apps", "a1", "A", ["data"], 10, False, T0)
    err = refused(REQUIRED, m.check, app_target("configurations"), "A", T0)  # not covered
    assert err.lock is None  # the caller's own lock
    m.acquire("apps", "a1", "A", ["configurations"], 10, True, T0)
    m.check(app_target("configurations"), "A", T0)
    err = refused(REQUIRED, m.check, app_target("configurations"), "B", T0)  # rule 1 first
    assert err.lock is not None and err.lock.client_id == "A"  # the holder is named
    m.check(app_target("data"), "B", T0)  # not required, not covered


def test_sweep_removes_only_expired() -> None:
    m = manager()
    m.acquire("apps", "a1", "A", None, 10, False, T0)
    m.acquire("apps", "a2", "A", None, 50, False, T0)
    assert [lk.entity_id for lk in m.sweep(T0 + 20)] == ["a1"]
    assert list(m.locks) == [("apps", "a2")]


def test_client_id_rules() -> None:
    assert check_client_id("ui-1") == "ui-1"
    for bad in (None, "", "x" * 257, "a\nb"):
        with pytest.raises(LockError):
            check_client_id(bad)


def test_resolution_entity_then_type_then_global() -> None:
    assert resolve_config(None, ("data",), False, 60) == LockConfig(("data",), False, 60.0)
    block = {"required_scopes": ["faults"], "max_expiration": 0}
    assert resolve_config(block, ("data",), False, 60) == LockConfig(("faults",), True, 60.0)
    block = {"breakable": False, "max_expiration": 15}
    assert resolve_config(block, ("data",), True, 60) == LockConfig((), False, 15.0)
