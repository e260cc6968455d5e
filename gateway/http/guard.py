"""The one guard every route passes before its handler: roles, locks and other checks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from .routes import Route

Check = Callable[[web.Request, Route], Awaitable[None]]


class Guard:
    """Ordered checks; each raises ApiError to refuse. Write checks run only on writes."""

    def __init__(self) -> None:
        self.all_checks: list[Check] = []
        self.write_checks: list[Check] = []

    @property
    def active(self) -> bool:
        """True when any check is installed (the middleware skips the call otherwise)."""
        return bool(self.all_checks or self.write_checks)

    def add(self, check: Check, *, writes_only: bool = False) -> None:
        """Append a check (authentication and roles for all, locks for writes)."""
        (self.write_checks if writes_only else self.all_checks).append(check)

    async def __call__(self, request: web.Request, route: Route) -> None:
        for check in self.all_checks:
            await check(request, route)
        if route.is_write:
            for check in self.write_checks:
                await check(request, route)
