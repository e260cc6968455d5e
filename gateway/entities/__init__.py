"""Entities: the entity collections and items, their status, and the manifest's status."""
