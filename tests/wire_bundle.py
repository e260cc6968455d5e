"""The Wire bundle: the configured profile's serializer for every resource."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.configurations.wire import CONFIGURATIONS, ConfigurationWire
from gateway.data.wire import DATA, DataWire
from gateway.faults.wire import FAULTS, FaultWire
from gateway.locks.wire import LOCKS, LockWire
from gateway.logs.wire import LOGS, LogWire
from gateway.operations.wire import OPERATIONS, OperationWire
from gateway.push.wire import PUSH, PushWire
from gateway.scripts.wire import SCRIPTS, ScriptWire
from gateway.wire.auth import AUTH, AuthWire
from gateway.wire.docs import DOCS, DocsWire
from gateway.wire.entities import ENTITIES, EntityWire
from gateway.wire.errors import ERRORS, ErrorWire

PROFILES = ("spec", "medkit")


@dataclass(frozen=True)
class Wire:
    """Serializers of one profile, all writing `x-<vendor>` keys with one vendor word."""

    profile: str
    vendor: str
    errors: ErrorWire
    entities: EntityWire
    faults: FaultWire
    operations: OperationWire
    configurations: ConfigurationWire
    data: DataWire
    auth: AuthWire
    locks: LockWire
    scripts: ScriptWire
    logs: LogWire
    push: PushWire
    docs: DocsWire

    @property
    def xv(self) -> str:
        """The vendor extension key, e.g. x-vendor."""
        return f"x-{self.vendor}"


def make_wire(profile: str, vendor: str) -> Wire:
    """The serializers of `profile` (spec or medkit) for the vendor word."""
    if profile not in PROFILES:
        raise ValueError(f"unknown wire profile {profile!r}; use one of {', '.join(PROFILES)}")
    xv = f"x-{vendor}"
    return Wire(
        profile=profile, vendor=vendor,
        errors=ERRORS[profile](xv), entities=ENTITIES[profile](xv), faults=FAULTS[profile](xv),
        operations=OPERATIONS[profile](xv), configurations=CONFIGURATIONS[profile](xv),
        data=DATA[profile](xv), auth=AUTH[profile](xv), locks=LOCKS[profile](xv),
        scripts=SCRIPTS[profile](xv), logs=LOGS[profile](xv), push=PUSH[profile](xv),
        docs=DOCS[profile](xv),
    )
