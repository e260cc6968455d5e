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
        # Per write check: a function telling that it passes every write right now (or None).
        self._write_quiet: list[Callable[[], bool] | None] = []

    @property
    def active(self) -> bool:
        """True when any check is installed (the middleware skips the call otherwise)."""
        return bool(self.all_checks or self.write_checks)

    def add(self, check: Check, *, writes_only: bool = False,
            quiet: Callable[[], bool] | None = None) -> None:
        """Append a check (authentication and roles for all, locks for writes); `quiet` of a
        write check tells when it would pass every write (e.g. no lock held or required)."""
        if writes_only:
            self.write_checks.append(check)
            self._write_quiet.append(quiet)
        else:
            self.all_checks.append(check)

    def quiet_on_writes(self) -> bool:
        """True when no check would look at a write now (the fast path may skip the guard)."""
        return not self.all_checks and all(q is not None and q() for q in self._write_quiet)

    async def __call__(self, request: web.Request, route: Route) -> None:
        for check in self.all_checks:
            await check(request, route)
        if route.is_write:
            for check in self.write_checks:
                await check(request, route)
