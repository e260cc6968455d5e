"""Entity merge across gateways (gateway/federation/fleet.py): ids, contributors, availability."""

from __future__ import annotations

import random

from gateway.federation.fleet import PeerSet, local_view, merge
from gateway.model.entities import Entity, EntitySet


def robot(apps: dict[str, str], host: str = "host", extra_components: tuple[str, ...] = ()
          ) -> EntitySet:
    """A runtime-only style set: apps -> namespace function, all on one host component."""
    es = EntitySet()
    comp = es.components[host] = Entity("components", host, host)
    for cid in extra_components:
        es.components[cid] = Entity("components", cid, cid)
    for aid, func in apps.items():
        es.apps[aid] = Entity("apps", aid, aid, node_fqn=f"/{func}/{aid}", namespace=f"/{func}",
                              component=host)
        comp.hosts.append(aid)
        f = es.functions.setdefault(func, Entity("functions", func, func))
        f.hosts.append(aid)
    return es


def test_components_and_functions_merge_by_id_apps_keep_local_ids() -> None:
    local = robot({"temp_sensor": "powertrain"})
    r1 = robot({"temp_sensor": "powertrain", "calibration": "powertrain"})
    r2 = robot({"lidar_sensor": "perception"}, host="other")
    view = merge(local, [PeerSet("robot1", r1), PeerSet("robot2", r2)], generation=7)
    es = view.entities
    assert es.generation == 7
    assert set(es.apps) == {"temp_sensor", "robot1__temp_sensor", "calibration", "lidar_sensor"}
    assert view.contributors("components", "host") == ["local", "robot1"]
    assert view.contributors("components", "other") == ["robot2"]
    assert view.contributors("functions", "powertrain") == ["local", "robot1"]
    assert es.components["host"].hosts == ["temp_sensor", "robot1__temp_sensor", "calibration"]
    assert es.functions["powertrain"].hosts == ["temp_sensor", "robot1__temp_sensor",
                                                "calibration"]
    # a peer's app: no local node (handlers skip it), the peer's id and node kept aside
    app = es.apps["robot1__temp_sensor"]
    assert app.node_fqn is None and app.name == "temp_sensor" and app.component == "host"
    origin = view.app_origin("robot1__temp_sensor")
    assert origin is not None and (origin.gateway, origin.remote_id, origin.node_fqn) == (
        "robot1", "temp_sensor", "/powertrain/temp_sensor")
    assert view.fleet_app_id("robot1", "temp_sensor") == "robot1__temp_sensor"
    assert view.fleet_app_id("robot1", "calibration") == "calibration"
    assert view.fleet_app_id("local", "temp_sensor") == "temp_sensor"
    # the local set is not changed by merging
    assert local.components["host"].hosts == ["temp_sensor"]


def test_owner_is_the_single_peer_contributor() -> None:
    local = robot({"a": "f"})
    r1 = robot({"b": "g"}, host="h1")
    view = merge(local, [PeerSet("robot1", r1)], 1)
    assert view.owner("apps", "b") is not None and view.owner("apps", "b").gateway == "robot1"
    assert view.owner("components", "h1") is not None
    assert view.owner("apps", "a") is None and view.owner("components", "host") is None
    assert view.owner("functions", "g").remote_id == "g"
    assert view.peers_of("apps", "a") == []


def test_colliding_remote_apps_are_renamed_whatever_the_peer_order() -> None:
    r1 = robot({"x": "f"})
    r2 = robot({"x": "f"})
    for order in ([PeerSet("r1", r1), PeerSet("r2", r2)], [PeerSet("r2", r2), PeerSet("r1", r1)]):
        view = merge(EntitySet(), order, 1)
        assert set(view.entities.apps) == {"r1__x", "r2__x"}
    # alone, a remote app keeps its id
    assert set(merge(EntitySet(), [PeerSet("r1", r1)], 1).entities.apps) == {"x"}


def test_a_local_app_already_named_like_a_renamed_one() -> None:
    local = robot({"x": "f", "r1__x": "f"})
    view = merge(local, [PeerSet("r1", robot({"x": "f"}))], 1)
    assert view.fleet_app_id("r1", "x") == "r1__x_2"


def test_availability_follows_the_owning_peers_health() -> None:
    local = robot({"a": "f"})
    r1 = robot({"b": "g"}, host="h1")
    view = merge(local, [PeerSet("robot1", r1, online=False)], 1)
    assert not view.available("apps", "b") and not view.available("components", "h1")
    assert view.available("apps", "a") and view.available("components", "host")
    r2 = robot({"c": "g"}, host="h1")
    view = merge(local, [PeerSet("robot1", r1, online=False), PeerSet("robot2", r2)], 1)
    assert view.available("components", "h1")  # robot2 still answers for it
    assert not view.available("apps", "b")


def test_fleet_of_one() -> None:
    local = robot({"a": "f"})
    view = local_view(local)
    assert view.contributors("apps", "a") == ["local"] and view.owner("apps", "a") is None


def test_hosts_and_dependencies_merge_in_order_once_as_a_list_scan_would() -> None:
    # the merge keeps a set per entity beside its lists; the answer is what scanning the
    # list for every host gave: first-seen order, each id once, duplicates within a peer too
    rng = random.Random(7)
    local = EntitySet()
    local.functions["drive"] = Entity("functions", "drive", "drive", hosts=["a0", "a1"],
                                      depends_on=["d0"])
    peers = []
    for i in range(60):
        es = EntitySet()
        hosts = [f"a{rng.randrange(8)}" for _ in range(rng.randrange(4))]
        deps = [f"d{rng.randrange(5)}" for _ in range(rng.randrange(3))]
        es.functions["drive"] = Entity("functions", "drive", "drive", hosts=hosts,
                                       depends_on=deps)
        peers.append(PeerSet(f"r{i}", es, True))
    expect_hosts, expect_deps = ["a0", "a1"], ["d0"]
    for p in peers:
        for h in p.entities.functions["drive"].hosts:
            if h not in expect_hosts:
                expect_hosts.append(h)
        for d in p.entities.functions["drive"].depends_on:
            if d not in expect_deps:
                expect_deps.append(d)
    got = merge(local, peers, 1).entities.functions["drive"]
    assert got.hosts == expect_hosts and got.depends_on == expect_deps
    assert local.functions["drive"].hosts == ["a0", "a1"]  # the local set is not touched
