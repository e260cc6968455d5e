"""Tunnel frames (gateway/federation/tunnel.py) round-trip; local connections need the secret."""

import json

import pytest

from gateway.federation.tunnel import (
    CLOSE,
    DATA,
    OPEN,
    frame,
    head_has_secret,
    parse,
    unauthorized_answer,
)


def test_frames_round_trip() -> None:
    for stream, kind, payload in ((1, OPEN, b""), (2**32 - 1, DATA, b"GET / HTTP/1.1\r\n"),
                                  (7, CLOSE, b"")):
        assert parse(frame(stream, kind, payload)) == (stream, kind, payload)


def test_a_short_frame_is_refused() -> None:
    with pytest.raises(ValueError):
        parse(b"\x00\x00\x01")


def test_a_head_must_carry_the_tunnel_secret() -> None:
    head = (b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1:1\r\n"
            b"x-vendor-tunnel-secret:  s3cret \r\n\r\n")
    assert head_has_secret(head, "X-Vendor-Tunnel-Secret", "s3cret")
    assert not head_has_secret(head, "X-Vendor-Tunnel-Secret", "s3cre")
    assert not head_has_secret(head, "X-Vendor-Tunnel-Secret", "s3cret2")
    assert not head_has_secret(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "X-Vendor-Tunnel-Secret",
                               "s3cret")
    # the request line is not a header, whatever it holds
    assert not head_has_secret(b"X-Vendor-Tunnel-Secret: s3cret\r\n\r\n",
                               "X-Vendor-Tunnel-Secret", "s3cret")


def test_the_refusal_is_a_401_with_the_error_body() -> None:
    raw = unauthorized_answer("X-Vendor-Tunnel-Secret")
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 401 ")
    assert json.loads(body)["error_code"] == "unauthorized"
    assert f"Content-Length: {len(body)}".encode() in head
