"""Typed API errors and the one place that renders them as the spec's error body."""

from __future__ import annotations

import errno
from typing import Any

from .process.storage import INSUFFICIENT, StorageWriteError, failure_kind

# error_code values of the spec's Errors part.
NOT_FOUND = "resource-not-found"
INVALID_REQUEST = "invalid-request"
INVALID_PARAMETER = "invalid-parameter"
NOT_RESPONDING = "not-responding"
VENDOR_ERROR = "vendor-error"
INTERNAL_ERROR = "internal-error"
SERVICE_UNAVAILABLE = "service-unavailable"
NOT_IMPLEMENTED = "not-implemented"  # 501 (the spec gives only the status)
# 507 Insufficient Storage: vendor-error with this vendor code (the spec's codes have none).
INSUFFICIENT_STORAGE = "x-vendor-insufficient-storage"


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


def storage_error(err: StorageWriteError) -> ApiError:
    """507 for a full or read-only file system, else 500 internal-error; the message names the
    store, the directory and its free space."""
    if err.insufficient:
        return vendor_error(507, INSUFFICIENT_STORAGE, err.message, **err.parameters())
    return ApiError(500, INTERNAL_ERROR, err.message, parameters=err.parameters())


def os_error(exc: OSError) -> ApiError:
    """The answer to an OSError no handler expected: 507 when storage ran out, else an honest
    500 internal-error naming the error (never resource-not-found)."""
    path = exc.filename if isinstance(exc.filename, str) else None
    where = path.rpartition("/")[0] or "/" if path else None
    params: dict[str, Any] = {"reason": exc.strerror or type(exc).__name__,
                              "errno": errno.errorcode.get(exc.errno or 0)}
    if path:
        params["path"] = path
    if failure_kind(exc) in INSUFFICIENT and where is not None:
        return storage_error(StorageWriteError("gateway", where, exc))
    if failure_kind(exc) in INSUFFICIENT:
        params["free_bytes"] = None
        return vendor_error(507, INSUFFICIENT_STORAGE, f"Insufficient storage: "
                            f"{params['reason']}", **params)
    text = f"{params['reason']} ({path})" if path else params["reason"]
    return ApiError(500, INTERNAL_ERROR, f"Internal error while handling the request: {text}; "
                                         "see the gateway log", parameters=params)
