"""Item ids on aggregating entities: rules 1-3 and 6."""

from __future__ import annotations

import pytest

from gateway.model.items import ItemLookupError, MemberItem, assign_ids, resolve

LIDAR = MemberItem("lidar_sensor", "/perception/lidar/calibrate")
ENGINE = MemberItem("calibration", "/powertrain/engine/calibrate")
LONG = MemberItem("long_calibration", "/powertrain/engine/long_calibration")


def test_rule1_short_names_by_default() -> None:
    assert assign_ids([ENGINE, LONG]) == ["calibrate", "long_calibration"]
    assert assign_ids([]) == []


def test_rule2_same_id_from_two_members_is_qualified() -> None:
    assert assign_ids([LIDAR, ENGINE, LONG]) == [
        "lidar_sensor:calibrate", "calibration:calibrate", "long_calibration"]


def test_rule3_one_member_with_a_short_name_twice_uses_paths() -> None:
    a = MemberItem("multi", "/a/reset")
    b = MemberItem("multi", "/b/reset")
    c = MemberItem("multi", "/b/start")
    # on the member itself: just the path without the leading slash
    assert assign_ids([a, b, c]) == ["a/reset", "b/reset", "start"]
    # merged with another member that has its own (distinct) `reset`: rule 3 ids stay
    other = MemberItem("solo", "/c/reset")
    assert assign_ids([a, b, other]) == ["a/reset", "b/reset", "reset"]


def test_rule3_then_rule2_when_paths_still_clash() -> None:
    # two members each carrying /x/reset twice (e.g. the same absolute names)
    items = [MemberItem("m1", "/x/reset"), MemberItem("m1", "/y/reset"),
             MemberItem("m2", "/x/reset"), MemberItem("m2", "/z/reset")]
    assert assign_ids(items) == ["m1:x/reset", "y/reset", "m2:x/reset", "z/reset"]


def test_resolve_assigned_ids() -> None:
    items = [LIDAR, ENGINE, LONG]
    ids = assign_ids(items)
    for k, assigned in enumerate(ids):
        assert resolve(assigned, items, ids) == k


def test_rule6_a_bare_id_naming_one_item_works() -> None:
    items = [LIDAR, ENGINE, LONG]
    ids = assign_ids(items)
    assert resolve("perception/lidar/calibrate", items, ids) == 0
    assert resolve("/powertrain/engine/calibrate", items, ids) == 1
    # member-qualified although the id is bare
    assert resolve("long_calibration:long_calibration", items, ids) == 2
    # member-qualified full path
    assert resolve("calibration:powertrain/engine/calibrate", items, ids) == 1


def test_rule6_ambiguous_and_missing() -> None:
    items = [LIDAR, ENGINE]
    ids = assign_ids(items)
    with pytest.raises(ItemLookupError) as err:
        resolve("calibrate", items, ids)
    assert err.value.candidates == ["lidar_sensor:calibrate", "calibration:calibrate"]
    with pytest.raises(ItemLookupError) as err:
        resolve("nothing", items, ids)
    assert err.value.candidates == []
    with pytest.raises(ItemLookupError):
        resolve("ghost:calibrate", items, ids)
    with pytest.raises(ItemLookupError):
        resolve("lidar_sensor:long_calibration", items, ids)


def test_short_of_root_path() -> None:
    item = MemberItem("n", "/calibrate")
    assert item.short == "calibrate" and item.long == "calibrate"
    assert resolve("/calibrate", [item], assign_ids([item])) == 0
