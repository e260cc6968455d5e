"""The error tree's old address, kept for the data-read handler until it imports gateway.errors."""

from ..errors import ApiError, invalid_parameter, not_found, vendor_error

__all__ = ["ApiError", "invalid_parameter", "not_found", "vendor_error"]
