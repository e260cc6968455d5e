"""The handler helpers' old address, kept for the data-read handler (gateway/http/resource_helpers.py)."""

from ..http.resource_helpers import list_collection, resolve_entity

__all__ = ["list_collection", "resolve_entity"]
