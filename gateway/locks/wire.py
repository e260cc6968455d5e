"""Lock shapes: the lock body and the refusals of lock routes and lock-guarded writes."""

from __future__ import annotations

from typing import Any

from ..errors import INVALID_REQUEST, ApiError
from ..model.timestamps import iso
from ..wire._base import WireBase
from .rules import (
    CONFLICT,
    EXISTS,
    INVALID,
    NOT_BREAKABLE,
    NOT_FOUND,
    NOT_OWNER,
    REQUIRED,
    Lock,
    LockError,
)

LOCK_BROKEN = "lock-broken"
REQUIRED_DETAILS = "A lock must be held to modify this resource collection"


def iso_s(epoch_s: float) -> str:
    """ISO 8601 UTC with millisecond precision."""
    return iso(int(epoch_s * 1e9))


class SpecLocks(WireBase):
    """The spec's lock body; refusals carry the reference's codes and parameters (coexist)."""

    def lock(self, lock: Lock, client_id: str | None, subject: str | None = None
             ) -> dict[str, Any]:
        """A lock; scopes omitted when the lock covers every collection. `owned`: the client
        id matches, and the token subject too when the request carried a token."""
        body: dict[str, Any] = {"id": lock.id, "owned": lock.held_by(client_id, subject)}
        if lock.scopes:
            body["scopes"] = list(lock.scopes)
        body["lock_expiration"] = iso_s(lock.expires_at)
        return body

    def error(self, err: LockError, lock_id: str | None = None) -> ApiError:
        """A refused lock operation or guarded write.

        Lock held by another client: 409 lock-broken {entity_id, collection, lock_id}; lock
        required but not held: 409 invalid-request {details, entity_id, collection}.
        """
        params: dict[str, Any] = {}
        if err.entity_id:
            params["entity_id"] = err.entity_id
        if err.kind == INVALID:
            return ApiError(400, "invalid-parameter", err.message, parameters=params or None)
        if err.kind == NOT_FOUND:
            params["lock_id"] = lock_id or (err.lock.id if err.lock else "")
            return ApiError(404, "resource-not-found", err.message, parameters=params)
        if err.kind == NOT_OWNER:
            params["lock_id"] = lock_id or (err.lock.id if err.lock else "")
            return ApiError(403, "forbidden", err.message, parameters=params)
        if err.kind in (EXISTS, NOT_BREAKABLE) and err.lock is not None:
            params["existing_lock_id"] = err.lock.id
            params["lock_expiration"] = iso_s(err.lock.expires_at)
            return ApiError(409, INVALID_REQUEST, err.message, parameters=params)
        if err.kind == REQUIRED:
            params.update(details=REQUIRED_DETAILS, collection=err.collection)
            if err.lock is not None:  # held by another client: name it
                params.update(lock_id=err.lock.id, lock_expiration=iso_s(err.lock.expires_at))
            return ApiError(409, INVALID_REQUEST, err.message, parameters=params)
        if err.kind == CONFLICT and err.lock is not None:
            params.update(collection=err.collection, lock_id=err.lock.id,
                          lock_expiration=iso_s(err.lock.expires_at))
            return ApiError(409, LOCK_BROKEN, err.message, parameters=params)
        return ApiError(409, INVALID_REQUEST, err.message, parameters=params or None)


class MedkitLocks(SpecLocks):
    """The reference sends the same lock shapes (medkit-wire.md has no CONFLICT row here)."""

    profile = "medkit"


LockWire = SpecLocks
LOCKS: dict[str, type[SpecLocks]] = {"spec": SpecLocks, "medkit": MedkitLocks}
