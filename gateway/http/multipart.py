"""The parts of a multipart request body, malformed or nested bodies mapped to a 400."""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import BodyPartReader, web

from ..errors import bad_request


async def body_parts(request: web.Request) -> AsyncIterator[BodyPartReader]:
    """Yield the top-level parts of the request's multipart body."""
    try:
        reader = await request.multipart()
    except (ValueError, AssertionError, KeyError) as exc:
        raise bad_request(f"Malformed multipart body: {exc}") from None
    while True:
        try:
            part = await reader.next()
        except (ValueError, AssertionError) as exc:
            raise bad_request(f"Malformed multipart body: {exc}") from None
        if part is None:
            return
        if not isinstance(part, BodyPartReader):
            raise bad_request("Nested multipart bodies are not accepted")
        yield part
