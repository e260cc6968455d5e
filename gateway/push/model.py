"""Runtime records of cyclic subscriptions and triggers, and their bodies (pure; explicit now)."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..model.resource_uris import API_PREFIX, ResourceRef
from .conditions import missing, resolve_pointer
from .rules import TriggerSpec

PENDING_EVENTS = 100  # queued per trigger while no client is attached (oldest dropped)
ACTIVE, TERMINATED = "active", "terminated"


def iso_ms(seconds: float) -> str:
    """ISO 8601 UTC with millisecond precision."""
    t = datetime.fromtimestamp(seconds, tz=timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


@dataclass(eq=False)
class Subscription:
    """A cyclic subscription: what it samples, how often, until when."""

    id: str
    entity_type: str
    entity_id: str
    ref: ResourceRef
    interval: str
    duration: int
    expires_at: float  # epoch seconds
    client_id: str | None = None
    topic: tuple[str, str] | None = None  # (topic, type) once resolved
    channel: Any = None  # sse.Channel
    streamed: bool = False  # a client attached at least once

    @property
    def event_source(self) -> str:
        """Path of the SSE stream."""
        return (f"{API_PREFIX}/{self.entity_type}/{self.entity_id}/cyclic-subscriptions/"
                f"{self.id}/events")

    def expired(self, now: float) -> bool:
        """True once the duration has run out."""
        return now >= self.expires_at

    def body(self, xv: str) -> dict[str, Any]:
        """The create/GET body."""
        vendor: dict[str, Any] = {"expires_at": iso_ms(self.expires_at)}
        if self.client_id:
            vendor["client_id"] = self.client_id
        return {"id": self.id, "observed_resource": self.ref.uri,
                "event_source": self.event_source, "protocol": "sse",
                "interval": self.interval, "duration": self.duration, xv: vendor}


@dataclass(eq=False)
class Trigger:
    """A trigger: its checked spec, previous value, expiry and undelivered events."""

    id: str
    entity_type: str
    entity_id: str
    spec: TriggerSpec
    raw: dict[str, Any]  # the create body (stored for persistent triggers)
    created_at: float
    expires_at: float | None = None
    status: str = ACTIVE
    previous: Any = None
    has_previous: bool = False
    topic: str | None = None  # resolved data topic
    pending: deque[bytes] = field(default_factory=lambda: deque(maxlen=PENDING_EVENTS))
    channel: Any = None
    fired: int = 0
    dirty: bool = False  # previous value changed since it was stored

    @property
    def collection(self) -> str:
        """The observed collection."""
        return self.spec.ref.collection

    @property
    def event_source(self) -> str:
        """Path of the SSE stream."""
        return f"{API_PREFIX}/{self.entity_type}/{self.entity_id}/triggers/{self.id}/events"

    def expired(self, now: float) -> bool:
        """True once the lifetime has run out."""
        return self.expires_at is not None and now >= self.expires_at

    def evaluate(self, payload: Any) -> bool:
        """Apply the condition to one change; the previous value moves on every evaluation.

        A `path` absent from the payload skips the sample (previous value kept).
        """
        value = resolve_pointer(payload, self.spec.pointer) if self.spec.pointer else payload
        if missing(value):
            return False
        fires = self.spec.condition.fires(self.previous, value, self.has_previous)
        self.previous, self.has_previous, self.dirty = value, True, True
        return fires

    def body(self) -> dict[str, Any]:
        """The create/GET/list body."""
        out: dict[str, Any] = {
            "id": self.id, "status": self.status, "observed_resource": self.spec.ref.uri,
            "event_source": self.event_source, "protocol": "sse",
            "trigger_condition": self.spec.condition.body(),
            "multishot": self.spec.multishot, "persistent": self.spec.persistent}
        if self.spec.lifetime is not None:
            out["lifetime"] = self.spec.lifetime
        if self.spec.path is not None:
            out["path"] = self.spec.path
        if self.spec.log_settings is not None:
            out["log_settings"] = dict(self.spec.log_settings)
        return out


def envelope(payload: Any, now: float | None = None) -> dict[str, Any]:
    """The SSE event envelope: timestamp and payload."""
    return {"timestamp": iso_ms(time.time() if now is None else now), "payload": payload}
