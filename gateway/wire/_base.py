"""The common base of every resource serializer."""

from __future__ import annotations


class WireBase:
    """A serializer that writes vendor keys as `xv` (e.g. x-vendor)."""

    profile = "spec"

    def __init__(self, xv: str) -> None:
        self.xv = xv
