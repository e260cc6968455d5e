"""Cumulative roles of the spec's Authentication part."""

from __future__ import annotations

import enum


class Role(enum.IntEnum):
    """A role; each one includes every lower role's rights."""

    VIEWER = 1
    OPERATOR = 2
    CONFIGURATOR = 3
    ADMIN = 4

    @property
    def label(self) -> str:
        """The role name as tokens and the OpenAPI document carry it."""
        return self.name.lower()
