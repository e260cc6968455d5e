"""Node proxies: entities made through them move to a new node (ros/rejoin.py)."""

from __future__ import annotations

from typing import Any

from gateway.ros.rejoin import EntityHandle, NodeProxy, unwrap


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
