"""One request on a plugin-owned entity as the per-kind servers see it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ..http.state import GatewayState
from ..model.entities import Entity
from .calls import Caller

if TYPE_CHECKING:
    from .loader import Loaded
    from .manager import PluginManager


@dataclass
class Served:
    """The request, the entity, the plugin that owns it and the action the route stands for."""

    request: web.Request
    state: GatewayState
    manager: PluginManager
    owner: Loaded
    entity: Entity
    kind: str
    action: str

    @property
    def call(self) -> Caller:
        """The owning plugin's call wrapper (timeout, plugin error body)."""
        return self.manager.caller(self.owner.name)

    @property
    def eid(self) -> str:
        """The entity id."""
        return self.entity.id

    def provider(self, kind: str) -> Any:
        """The owning plugin's provider of kind, or None."""
        return self.owner.providers.get(kind)


def items_of(value: Any, key: str = "id") -> list[dict[str, Any]]:
    """The dicts of a provider's list answer that carry a string `key`."""
    if not isinstance(value, list):
        return []
    return [dict(i) for i in value if isinstance(i, dict) and isinstance(i.get(key), str)]


def compact(body: dict[str, Any]) -> dict[str, Any]:
    """The body without null fields (the spec omits absent optional fields)."""
    return {k: v for k, v in body.items() if v is not None}
