"""Helpers of the MCP tests: the SDK's own clients against a real gateway (no tests here)."""

from __future__ import annotations

import asyncio
import json
import ssl
import sys
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.harness import ROOT

T = TypeVar("T")
BUDGET_S = 60.0  # one MCP session's whole work in a test


def run(coro: Awaitable[T]) -> T:
    """Run one test's client session to completion within a generous budget."""
    return asyncio.run(asyncio.wait_for(coro, BUDGET_S))  # type: ignore[arg-type]


@asynccontextmanager
async def http_client(port: int, token: str | None = None,
                      headers: dict[str, str] | None = None,
                      tls: ssl.SSLContext | None = None) -> Any:
    """The SDK's streamable HTTP client on a gateway's /mcp, with a bearer token."""
    hdrs = dict(headers or {})
    if token:
        hdrs["Authorization"] = f"Bearer {token}"
    scheme = "https" if tls is not None else "http"
    async with httpx2.AsyncClient(headers=hdrs, timeout=httpx2.Timeout(30.0, read=60.0),
                                  verify=tls if tls is not None else True) as h:
        transport = streamable_http_client(f"{scheme}://127.0.0.1:{port}/mcp", http_client=h)
        async with Client(transport) as client:
            yield client


@asynccontextmanager
async def stdio_client(port: int, token_file: Path | None = None) -> Any:
    """The SDK's stdio client running `diag-gateway mcp --gateway URL`."""
    args = ["-m", "gateway", "mcp", "--gateway", f"http://127.0.0.1:{port}"]
    if token_file is not None:
        args += ["--token-file", str(token_file)]
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT))
    async with Client(params) as client:
        yield client


async def tool(client: Any, name: str, **args: Any) -> dict[str, Any]:
    """A tool's structured answer; AssertionError with the text when it failed."""
    result = await client.call_tool(name, args)
    text = result.content[0].text if result.content else ""
    assert not result.is_error, f"{name}: {text}"
    return result.structured_content or json.loads(text)  # type: ignore[no-any-return]


async def tool_error(client: Any, name: str, **args: Any) -> str:
    """The error text of a tool call that must fail."""
    result = await client.call_tool(name, args)
    text = result.content[0].text if result.content else ""
    assert result.is_error, f"{name} succeeded: {text}"
    return text  # type: ignore[no-any-return]


async def poll(check: Callable[[], Awaitable[T]], what: str, timeout: float = 30.0) -> T:
    """Await `check()` until it returns something true (AssertionError past `timeout`)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = await check()
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.2)
