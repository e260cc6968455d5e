"""The entity declaration a peer serves (gateway/federation/wire.py): round trip, strict parsing."""

from __future__ import annotations

import pytest

from gateway.federation.wire import WireError, dump, etag, load
from gateway.model.entities import Entity, EntitySet


def sample() -> EntitySet:
    es = EntitySet(generation=4)
    es.components["host"] = Entity("components", "host", "host", identity={"model": "x"},
                                   hosts=["a"])
    es.apps["a"] = Entity("apps", "a", "a", node_fqn="/ns/a", namespace="/ns", component="host",
                          is_online=False)
    es.functions["ns"] = Entity("functions", "ns", "ns", description="d", hosts=["a"])
    return es


def test_round_trip() -> None:
    body = dump(sample(), "robot1", 4)
    assert body["gateway"] == "robot1" and body["generation"] == 4
    es, generation = load(body)
    assert generation == 4
    assert es.apps["a"] == sample().apps["a"]
    assert es.components["host"].identity == {"model": "x"}
    assert es.functions["ns"].description == "d"


@pytest.mark.parametrize("mutate", [
    lambda b: b.update(format=2),
    lambda b: b.update(generation="4"),
    lambda b: b.update(apps="nope"),
    lambda b: b["apps"].append({"id": "bad id"}),
    lambda b: b["apps"].append({"id": "a"}),  # duplicate
    lambda b: b["apps"][0].update(is_online="yes"),
    lambda b: b["components"][0].update(hosts=["ok", 3]),
    lambda b: b["apps"][0].update(component="../x"),
    lambda b: b["functions"][0].update(name=7),
])
def test_any_unusable_part_discards_the_whole_declaration(mutate) -> None:  # type: ignore[no-untyped-def]
    body = dump(sample(), "r", 4)
    mutate(body)
    with pytest.raises(WireError):
        load(body)


def test_not_an_object() -> None:
    with pytest.raises(WireError):
        load([1, 2])


def test_etag_names_boot_and_generation() -> None:
    assert etag(255, 3) == '"ff-3"' and etag(255, 4) != etag(255, 3) != etag(254, 3)
