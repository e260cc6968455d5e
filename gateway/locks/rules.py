"""Lock rules on components and apps: acquire, extend, release, access checks, expiry (pure).

Every method takes an explicit `now` (epoch seconds). One lock per entity; an expired lock
stops counting at once and is removed by `sweep`. The owner of a lock is the client id and,
with authentication, the token's subject: both must match to use, extend or release it. Lock
ids never repeat, across restarts either (gateway/model/runids.py). Errors are `LockError`s
whose `kind` names the refusal; the HTTP layer turns them into the spec's error bodies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from ..model.runids import new_id

# Collections a lock may name (spec: locks); an empty scope list means every collection.
SCOPES = ("data", "operations", "configurations", "faults", "bulk-data", "modes", "scripts",
          "logs", "cyclic-subscriptions")
LOCKABLE = ("components", "apps")
MAX_CLIENT_ID = 256

# LockError kinds
INVALID = "invalid"  # 400 invalid-parameter
EXISTS = "exists"  # 409: another unexpired lock holds the entity
NOT_BREAKABLE = "not-breakable"  # 409: break_lock on a non-breakable entity
NOT_FOUND = "not-found"  # 404: unknown, expired or on another entity
NOT_OWNER = "not-owner"  # 403: held by another client
REQUIRED = "required"  # 409: the collection needs a lock the caller does not hold
CONFLICT = "conflict"  # 409: another client's lock covers the collection


class LockError(Exception):
    """A refused lock operation or access; `kind` names why, `lock` the lock concerned."""

    def __init__(self, kind: str, message: str, lock: Lock | None = None,
                 entity_id: str = "", collection: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.lock = lock
        self.entity_id = entity_id
        self.collection = collection


@dataclass(frozen=True)
class LockConfig:
    """Resolved lock rules of one entity."""

    required_scopes: tuple[str, ...] = ()
    breakable: bool = True
    max_expiration: float = 3600.0


@dataclass
class Lock:
    """One held lock."""

    id: str
    kind: str  # components or apps
    entity_id: str
    client_id: str
    scopes: tuple[str, ...]  # empty: every collection
    expires_at: float
    acquired_at: float = 0.0
    subject: str = ""  # the token's subject when the lock was taken with one

    def held_by(self, client_id: str | None, subject: str | None = "") -> bool:
        """Whether this client (and token subject; None: not known here) owns the lock."""
        return bool(client_id) and self.client_id == client_id and (
            subject is None or self.subject == subject)

    def covers(self, collection: str) -> bool:
        """Whether the lock covers a collection."""
        return not self.scopes or collection in self.scopes

    def expired(self, now: float) -> bool:
        """Whether the lock has run out."""
        return now >= self.expires_at


@dataclass
class Target:
    """What a write touches: the entity, its lockable ancestors (nearest first), the collection.

    `required_on`: the entities whose required scopes apply (None: the entity alone; a write
    through a parent reaches a member and the components between it and the parent too).
    """

    kind: str
    entity_id: str
    collection: str
    ancestors: Sequence[tuple[str, str]] = ()
    required_on: Sequence[tuple[str, str]] | None = None


def check_client_id(client_id: str | None) -> str:
    """The client id of a lock route request; LockError(INVALID) when missing or malformed."""
    if not client_id:
        raise LockError(INVALID, "The X-Client-Id header is required on lock changes (any "
                                 "unique string your client chooses)")
    if len(client_id) > MAX_CLIENT_ID:
        raise LockError(INVALID, f"X-Client-Id is longer than {MAX_CLIENT_ID} characters")
    if any(ord(c) < 32 or ord(c) == 127 for c in client_id):
        raise LockError(INVALID, "X-Client-Id contains control characters")
    return client_id


def check_scopes(scopes: Iterable[str] | None) -> tuple[str, ...]:
    """Validated scope names (deduplicated, in request order); LockError(INVALID) otherwise."""
    if scopes is None:
        return ()
    out: list[str] = []
    for scope in scopes:
        if not isinstance(scope, str) or scope not in SCOPES:
            raise LockError(INVALID, f"Unknown lock scope {scope!r}; valid scopes: "
                                     f"{', '.join(SCOPES)} (empty or absent: all)")
        if scope not in out:
            out.append(scope)
    return tuple(out)


ConfigOf = Callable[[str, str], LockConfig]


@dataclass
class LockManager:
    """Locks by entity; `config_of(kind, entity_id)` gives each entity's resolved rules."""

    config_of: ConfigOf
    locks: dict[tuple[str, str], Lock] = field(default_factory=dict)

    def _ttl(self, kind: str, entity_id: str, requested: object) -> float:
        if isinstance(requested, bool) or not isinstance(requested, (int, float)) \
                or requested != requested:
            raise LockError(INVALID, "lock_expiration must be a number of seconds")
        if requested <= 0:
            raise LockError(INVALID, f"lock_expiration must be greater than 0 (got {requested})")
        # Spec: a request above the applicable maximum is capped.
        return float(min(requested, self.config_of(kind, entity_id).max_expiration))

    def acquire(self, kind: str, entity_id: str, client_id: str, scopes: Iterable[str] | None,
                expiration: object, break_lock: bool, now: float,
                subject: str = "", dry_run: bool = False) -> tuple[Lock, Lock | None]:
        """A new lock and the lock it replaced (break_lock), if any; `dry_run` checks only."""
        if kind not in LOCKABLE:
            raise LockError(INVALID, f"{kind} cannot be locked (only components and apps)")
        chosen = check_scopes(scopes)
        ttl = self._ttl(kind, entity_id, expiration)
        held = self.locks.get((kind, entity_id))
        if held is not None and not held.expired(now):
            if not break_lock:
                raise LockError(EXISTS, f"Entity '{entity_id}' is already locked (lock "
                                        f"'{held.id}'); release it, wait for it to expire, or "
                                        "send break_lock: true", held, entity_id)
            if not self.config_of(kind, entity_id).breakable:
                raise LockError(NOT_BREAKABLE, "Existing lock is not breakable", held, entity_id)
        else:
            held = None  # an expired lock is replaced silently
        if dry_run:
            return Lock("", kind, entity_id, client_id, chosen, now + ttl, now, subject), held
        lock = Lock(new_id("lock"), kind, entity_id, client_id, chosen, now + ttl, now, subject)
        self.locks[(kind, entity_id)] = lock
        return lock, held

    def get(self, kind: str, entity_id: str, lock_id: str) -> Lock:
        """The entity's lock with this id (expired but unswept locks included)."""
        lock = self.locks.get((kind, entity_id))
        if lock is None or lock.id != lock_id:
            raise LockError(NOT_FOUND, f"Lock '{lock_id}' not found on '{entity_id}'",
                            entity_id=entity_id)
        return lock

    def _owned(self, kind: str, entity_id: str, lock_id: str, client_id: str,
               now: float, subject: str) -> Lock:
        lock = self.get(kind, entity_id, lock_id)
        if lock.expired(now):
            raise LockError(NOT_FOUND, f"Lock '{lock_id}' on '{entity_id}' has expired",
                            lock, entity_id)
        if not lock.held_by(client_id, subject):
            raise LockError(NOT_OWNER, f"Lock '{lock_id}' is held by another client",
                            lock, entity_id)
        return lock

    def extend(self, kind: str, entity_id: str, lock_id: str, client_id: str,
               expiration: object, now: float, subject: str = "") -> Lock:
        """Move the expiry to now plus expiration (capped at the maximum)."""
        lock = self._owned(kind, entity_id, lock_id, client_id, now, subject)
        lock.expires_at = now + self._ttl(kind, entity_id, expiration)
        return lock

    def release(self, kind: str, entity_id: str, lock_id: str, client_id: str,
                now: float, subject: str = "") -> Lock:
        """Remove a lock the client holds."""
        lock = self._owned(kind, entity_id, lock_id, client_id, now, subject)
        del self.locks[(kind, entity_id)]
        return lock

    def active(self, kind: str, entity_id: str, now: float) -> Lock | None:
        """The unexpired lock of an entity, if any."""
        lock = self.locks.get((kind, entity_id))
        return lock if lock is not None and not lock.expired(now) else None

    def check(self, target: Target, client_id: str | None, now: float,
              subject: str = "") -> None:
        """Refuse a write (LockError REQUIRED or CONFLICT); no header means another client."""
        collection = target.collection
        required_on = target.required_on
        if required_on is None:
            required_on = ((target.kind, target.entity_id),)
        for kind, entity_id in required_on:
            if collection not in self.config_of(kind, entity_id).required_scopes:
                continue
            own = self.active(kind, entity_id, now)
            if not (own is not None and own.held_by(client_id, subject)
                    and own.covers(collection)):
                holder = own if own is not None and not own.held_by(client_id, subject) \
                    else None
                where = "this entity" if (kind, entity_id) == (target.kind, target.entity_id) \
                    else f"{kind[:-1]} '{entity_id}'"
                raise LockError(REQUIRED, f"A lock is required for {collection} on {where}",
                                holder, entity_id, collection)
        for kind, entity_id in ((target.kind, target.entity_id), *target.ancestors):
            lock = self.active(kind, entity_id, now)
            if lock is not None and lock.covers(collection) and \
                    not lock.held_by(client_id, subject):
                raise LockError(CONFLICT, f"Entity '{entity_id}' is locked by another client",
                                lock, entity_id, collection)

    def sweep(self, now: float) -> list[Lock]:
        """Remove and return the expired locks."""
        gone = [lock for lock in self.locks.values() if lock.expired(now)]
        for lock in gone:
            del self.locks[(lock.kind, lock.entity_id)]
        return gone

    def entity_locks(self, kind: str, entity_id: str) -> list[Lock]:
        """The entity's lock as a list (expired but unswept included)."""
        lock = self.locks.get((kind, entity_id))
        return [lock] if lock is not None else []


def resolve_config(entity_block: dict[str, object] | None, type_required: Sequence[str],
                   type_breakable: bool, global_max: float) -> LockConfig:
    """Per-entity block (replaces the type default whole), else the type default."""
    if entity_block is not None:
        scopes = entity_block.get("required_scopes") or ()
        max_exp = entity_block.get("max_expiration") or 0
        if not isinstance(max_exp, (int, float)) or isinstance(max_exp, bool) or max_exp <= 0:
            max_exp = global_max  # 0 (or negative, clamped to 0) uses the global maximum
        names = tuple(str(s) for s in scopes) if isinstance(scopes, (list, tuple)) else ()
        return LockConfig(names, bool(entity_block.get("breakable", True)), float(max_exp))
    return LockConfig(tuple(type_required), type_breakable, float(global_max))
