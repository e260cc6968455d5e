"""Plugins: Python packages registered under the `diag_gateway.plugins` entry point group."""

from .api import (
    ENTRY_POINT_GROUP,
    PLUGIN_API_VERSION,
    PROVIDER_KINDS,
    AccessDenied,
    AlreadyExists,
    InvalidInput,
    NotFound,
    Plugin,
    PluginError,
    PluginRoute,
    PreconditionFailed,
    Unsupported,
)
from .context import PluginContext

__all__ = [
    "ENTRY_POINT_GROUP", "PLUGIN_API_VERSION", "PROVIDER_KINDS", "AccessDenied", "AlreadyExists",
    "InvalidInput", "NotFound", "Plugin", "PluginContext", "PluginError", "PluginRoute",
    "PreconditionFailed", "Unsupported",
]
