"""What every tool needs: the caller's REST client and the page size."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# A tool's refusal reaches the model as an error result with this text (the REST reason).
from mcp.server.mcpserver.exceptions import ToolError as ToolFailure

from .rest import CURRENT, SCOPE_KEY, EntityPathError, Rest, RestError, entity_path


@dataclass
class ToolEnv:
    """Where tools find the caller's REST client: the HTTP request's scope, else `fallback`."""

    fallback: Callable[[], Rest] | None
    page_size: int = 50

    def rest(self, ctx: Any) -> Rest:
        """The REST client of the request `ctx` serves."""
        request = None
        try:
            request = ctx.request_context.request
        except (AttributeError, ValueError):
            pass
        scope = getattr(request, "scope", None)
        if isinstance(scope, dict) and isinstance(scope.get(SCOPE_KEY), Rest):
            return scope[SCOPE_KEY]
        current = CURRENT.get()
        if current is not None:
            return current
        if self.fallback is None:
            raise ToolFailure("no gateway to call: the request came without the gateway's scope")
        return self.fallback()

    def limit(self, limit: int | None) -> int:
        """A page size within 1..page_size."""
        return max(1, min(self.page_size, limit or self.page_size))


async def call(env: ToolEnv, ctx: Any, tool: str, method: str, path: str, **kw: Any) -> Any:
    """One REST call; a RestError becomes a ToolFailure naming the status and the API's message."""
    try:
        return await env.rest(ctx).call(method, path, tool=tool, **kw)
    except RestError as err:
        raise ToolFailure(str(err)) from None


def epath(entity: str) -> str:
    """The entity's REST path, or a ToolFailure explaining the expected form."""
    try:
        return entity_path(entity)
    except EntityPathError as exc:
        raise ToolFailure(str(exc)) from None
