"""Typed API errors and the one place that renders them as the spec's error body."""

from __future__ import annotations

from typing import Any

# error_code values of the spec's Errors part.
NOT_FOUND = "resource-not-found"
INVALID_REQUEST = "invalid-request"
INVALID_PARAMETER = "invalid-parameter"
NOT_RESPONDING = "not-responding"
VENDOR_ERROR = "vendor-error"
INTERNAL_ERROR = "internal-error"
SERVICE_UNAVAILABLE = "service-unavailable"
NOT_IMPLEMENTED = "not-implemented"  # 501 (the spec gives only the status)


class ApiError(Exception):
    """An error answered with the spec's GenericError body."""

    def __init__(
        self,
        status: int,
        error_code: str,
        message: str,
        *,
        vendor_code: str | None = None,
        parameters: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.message = message
        self.vendor_code = vendor_code
        self.parameters = parameters
        self.headers = headers

    def body(self, vendor: str) -> dict[str, Any]:
        """The error body; vendor codes are written with the configured vendor word."""
        out: dict[str, Any] = {"error_code": self.error_code, "message": self.message}
        if self.vendor_code:
            out["vendor_code"] = self.vendor_code.replace("x-vendor-", f"x-{vendor}-", 1)
            if out["error_code"] == VENDOR_ERROR or out["error_code"].startswith("x-vendor"):
                out["error_code"] = VENDOR_ERROR
        if self.parameters:
            out["parameters"] = self.parameters
        return out


def not_found(message: str, **parameters: Any) -> ApiError:
    """404 resource-not-found."""
    return ApiError(404, NOT_FOUND, message, parameters=parameters or None)


def bad_request(message: str, **parameters: Any) -> ApiError:
    """400 invalid-request."""
    return ApiError(400, INVALID_REQUEST, message, parameters=parameters or None)


def invalid_parameter(message: str, **parameters: Any) -> ApiError:
    """400 invalid-parameter."""
    return ApiError(400, INVALID_PARAMETER, message, parameters=parameters or None)


def not_implemented(feature: str, message: str) -> ApiError:
    """501 not-implemented for a feature-gated route whose feature is absent."""
    return ApiError(501, NOT_IMPLEMENTED, message, parameters={"feature": feature})


def not_responding(message: str, **parameters: Any) -> ApiError:
    """504 not-responding: a time budget ran out."""
    return ApiError(504, NOT_RESPONDING, message, parameters=parameters or None)


def vendor_error(status: int, vendor_code: str, message: str, **parameters: Any) -> ApiError:
    """A vendor-error with its vendor code."""
    return ApiError(
        status, VENDOR_ERROR, message, vendor_code=vendor_code, parameters=parameters or None
    )


def http_layer_error(status: int, message: str) -> ApiError:
    """An error raised before any handler ran: error_code is resource-not-found (spec rule 1)."""
    return ApiError(status, NOT_FOUND, message, parameters={"status": status})
