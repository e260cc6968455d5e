"""Tunnel frames (federation/tunnel.py): stream id, kind and payload round-trip."""

import pytest

from federation.tunnel import CLOSE, DATA, OPEN, frame, parse


def test_frames_round_trip() -> None:
    for stream, kind, payload in ((1, OPEN, b""), (2**32 - 1, DATA, b"GET / HTTP/1.1\r\n"),
                                  (7, CLOSE, b"")):
        assert parse(frame(stream, kind, payload)) == (stream, kind, payload)


def test_a_short_frame_is_refused() -> None:
    with pytest.raises(ValueError):
        parse(b"\x00\x00\x01")
