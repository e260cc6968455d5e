"""Node proxies: entities made through them move to a new node (ros/rejoin/proxy.py)."""

from __future__ import annotations

from typing import Any

from gateway.ros.rejoin.proxy import EntityHandle, Joined, NodeProxy, await_goodbye, unwrap


class FakeNode:
    """Records what is made and destroyed on it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.made: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.destroyed: list[Any] = []

    def _make(self, kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        self.made.append((kind, args, kwargs))
        return f"{self.name}:{kind}:{args[1]}"

    def create_subscription(self, *args: Any, **kwargs: Any) -> str:
        return self._make("sub", args, kwargs)

    def create_publisher(self, *args: Any, **kwargs: Any) -> str:
        return self._make("pub", args, kwargs)

    def create_service(self, *args: Any, **kwargs: Any) -> str:
        return self._make("srv", args, kwargs)

    def create_client(self, *args: Any, **kwargs: Any) -> str:
        return self._make("client", args, kwargs)

    def destroy_subscription(self, sub: Any) -> bool:
        self.destroyed.append(sub)
        return True

    def get_name(self) -> str:
        return self.name


def callback(msg: Any) -> None:
    """A subscription callback."""


def test_entities_move_with_their_arguments_and_callbacks() -> None:
    old, new = FakeNode("old"), FakeNode("new")
    proxy = NodeProxy(old)
    sub = proxy.create_subscription("String", "/a", callback, 10, callback_group="g")
    pub = proxy.create_publisher("String", "/b", 10)
    srv = proxy.create_service("Trigger", "/c", callback)
    client = proxy.create_client("Trigger", "/d")  # clients are not replayed: caches clear
    assert type(client) is str and proxy.replayed == 3
    assert isinstance(sub, EntityHandle) and unwrap(sub) == "old:sub:/a"
    assert proxy.get_name() == "old"
    assert proxy.move(new) == 0
    assert proxy.current is new and proxy.get_name() == "new"
    assert (unwrap(sub), unwrap(pub), unwrap(srv)) == ("new:sub:/a", "new:pub:/b", "new:srv:/c")
    assert new.made[0] == ("sub", ("String", "/a", callback, 10), {"callback_group": "g"})
    assert sub.upper() == "NEW:SUB:/A"  # attribute access goes to the current entity


def test_a_destroyed_entity_is_not_replayed() -> None:
    old, new = FakeNode("old"), FakeNode("new")
    proxy = NodeProxy(old)
    sub = proxy.create_subscription("String", "/a", callback, 10)
    assert proxy.destroy_subscription(sub) is True
    assert old.destroyed == ["old:sub:/a"] and proxy.replayed == 0
    proxy.move(new)
    assert new.made == []


def test_an_entity_that_cannot_be_made_again_is_counted() -> None:
    class Refusing(FakeNode):
        def create_publisher(self, *args: Any, **kwargs: Any) -> str:
            raise RuntimeError("no")

    proxy = NodeProxy(FakeNode("old"))
    pub = proxy.create_publisher("String", "/b", 10)
    proxy.create_subscription("String", "/a", callback, 10)
    assert proxy.move(Refusing("new")) == 1
    assert unwrap(pub) == "old:pub:/b"  # keeps the old one; the rest moved


def test_point_to_changes_the_node_without_moving() -> None:
    old, probe = FakeNode("old"), FakeNode("probe")
    proxy = NodeProxy(old)
    sub = proxy.create_subscription("String", "/a", callback, 10)
    proxy.point_to(probe)
    assert proxy.get_name() == "probe" and unwrap(sub) == "old:sub:/a" and probe.made == []


class _Listing:
    """A node whose graph lists the old nodes until `after` listings have been asked for."""

    def __init__(self, after: int) -> None:
        self.after, self.asked = after, 0

    def get_node_names(self) -> list[str]:
        self.asked += 1
        old = ["_gw", "_gw_calls"] if self.asked <= self.after else []
        return ["robot", "_gw", "_gw_calls", *old]


def test_the_old_participant_goes_once_its_nodes_left_the_new_graph() -> None:
    node = _Listing(after=3)
    assert await_goodbye(node, ("_gw", "_gw_calls"), budget_s=60.0)
    assert node.asked == 4  # waited through three listings with the old nodes


def test_a_goodbye_never_seen_ends_at_the_budget() -> None:
    node = _Listing(after=10**9)
    assert not await_goodbye(node, ("_gw", "_gw_calls"), budget_s=0.05)
    assert node.asked >= 2


def test_the_last_node_list_leads_the_goodbye_at_a_stop(monkeypatch: Any) -> None:
    order: list[str] = []

    class _Node:
        waitables: list[Any] = []

        def destroy_node(self) -> None:
            order.append("destroy")

    import rclpy

    import gateway.ros.rejoin.proxy as rejoin

    monkeypatch.setattr(rclpy, "try_shutdown", lambda context: order.append("shutdown"))
    monkeypatch.setattr(rejoin.time, "sleep", lambda s: order.append(f"pause {s}"))
    joined = Joined(context=None)
    joined.node = _Node()
    joined.shutdown(0.2)
    assert order == ["destroy", "pause 0.2", "shutdown"]
    order.clear()
    joined.shutdown(0.2)  # no nodes left: nothing to lead
    assert order == ["shutdown"]
