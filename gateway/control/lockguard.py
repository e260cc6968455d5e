"""The lock guard's old address, kept for the data-read handler until it imports gateway.locks."""

from ..locks.guard import guard_members

__all__ = ["guard_members"]
