"""Type descriptions: hashes and the definition text the converter reads."""

from __future__ import annotations

import struct

import pytest

from gateway._fast import converter_for_definition
from gateway.ros.interfaces.described import definition_text, parse_hash

HASH = "RIHS01_" + "ab" * 32


def test_parse_hash() -> None:
    raw = parse_hash(HASH)
    assert raw[0] == 1 and raw[1:] == bytes.fromhex("ab" * 32)
    for bad in ("RIHS01_abcd", "XX01_" + "ab" * 32, "nonsense"):
        with pytest.raises(ValueError):
            parse_hash(bad)


def test_definition_text_reads_with_the_converter() -> None:
    sources = [("pkg_msgs/msg/Inner", "msg", "float64 x\n"),
               ("pkg_msgs/msg/Outer", "msg", "string name\npkg_msgs/Inner inner\n")]
    text = definition_text("pkg_msgs/msg/Outer", sources)
    assert text.startswith("string name\n") and "MSG: pkg_msgs/msg/Inner\nfloat64 x" in text
    conv = converter_for_definition("pkg_msgs/msg/Outer", text)
    cdr = b"\x00\x01\x00\x00" + struct.pack("<I", 3) + b"ab\x00" + b"\x00" + struct.pack("<d", 2.0)
    assert conv.to_json(cdr) == b'{"name":"ab","inner":{"x":2.0}}'


def test_definition_text_refuses_missing_or_idl_sources() -> None:
    with pytest.raises(ValueError, match="no source"):
        definition_text("pkg_msgs/msg/Outer", [("pkg_msgs/msg/Inner", "msg", "float64 x\n")])
    with pytest.raises(ValueError, match="not in .msg form"):
        definition_text("pkg_msgs/msg/Outer", [("pkg_msgs/msg/Outer", "idl", "module {}")])
