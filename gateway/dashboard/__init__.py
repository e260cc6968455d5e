"""The built-in web dashboard: static files served at `/`, the API stays under /api/v1."""

from .routes import install

__all__ = ["install"]
