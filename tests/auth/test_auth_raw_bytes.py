"""Credentials that are not UTF-8 (raw bytes on the wire) answer 401, never 500."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from aiohttp.test_utils import TestServer

from tests.auth.test_auth_enforce import build

GARBAGE = b"\xff\xfe\x80\xc3("  # not UTF-8, not ASCII


async def _raw(server: TestServer, request: bytes) -> tuple[int, bytes, bytes]:
    """One request over a plain socket; (status, head, body) of the answer."""
    reader, writer = await asyncio.open_connection(server.host, server.port)
    writer.write(request)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 30)
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), head, body


def _exchange(tmp_path: Path, method: str, path: str, authorization: bytes,
              form: bytes = b"") -> tuple[int, bytes, bytes]:
    async def go() -> tuple[int, bytes, bytes]:
        async with TestServer(build(tmp_path, "all")) as server:
            return await _raw(server, method.encode() + b" /api/v1" + path.encode()
                              + b" HTTP/1.1\r\nHost: t\r\nAuthorization: " + authorization
                              + b"\r\nContent-Type: application/x-www-form-urlencoded"
                              + b"\r\nContent-Length: " + str(len(form)).encode()
                              + b"\r\nConnection: close\r\n\r\n" + form)

    return asyncio.run(go())


@pytest.mark.parametrize("token", [GARBAGE, b"ab" + GARBAGE + b".cd.ef"])
def test_a_bearer_token_of_raw_bytes_is_401_with_the_spec_body(
        tmp_path: Path, token: bytes, caplog: pytest.LogCaptureFixture) -> None:
    status, head, body = _exchange(tmp_path, "GET", "/things", b"Bearer " + token)
    assert status == 401, body
    err = json.loads(body)
    assert err["error_code"] == "unauthorized" and err["parameters"] == {"status": 401}
    assert b'error="invalid_token"' in head
    assert not [r for r in caplog.records if r.exc_info]  # no traceback logged


def test_basic_credentials_of_raw_bytes_are_401(tmp_path: Path) -> None:
    status, _, body = _exchange(tmp_path, "POST", "/auth/authorize", b"Basic " + GARBAGE,
                                b"grant_type=client_credentials")
    assert status == 401, body
    assert json.loads(body)["error"] == "invalid_client"
