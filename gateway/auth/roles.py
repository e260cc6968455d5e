"""The roles' old address, kept for the data-read handler until it imports gateway.model.roles."""

from ..model.roles import Role

__all__ = ["Role"]
