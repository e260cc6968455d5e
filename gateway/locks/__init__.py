"""Locks: the rules (pure), the guard's write check and expiry, the handlers and wire shapes."""
