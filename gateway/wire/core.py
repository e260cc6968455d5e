"""The core serializers of one profile (errors, entities, auth, docs); a feature's are its own."""

from __future__ import annotations

from dataclasses import dataclass

from .auth import AUTH, AuthWire
from .docs import DOCS, DocsWire
from .entities import ENTITIES, EntityWire
from .errors import ERRORS, ErrorWire

PROFILES = ("spec", "medkit")


@dataclass(frozen=True)
class CoreWire:
    """The core serializers of one profile, all writing `x-<vendor>` keys with one vendor word."""

    profile: str
    vendor: str
    errors: ErrorWire
    entities: EntityWire
    auth: AuthWire
    docs: DocsWire


def make_core_wire(profile: str, vendor: str) -> CoreWire:
    """The core serializers of `profile` (spec or medkit) for the vendor word."""
    if profile not in PROFILES:
        raise ValueError(f"unknown wire profile {profile!r}; use one of {', '.join(PROFILES)}")
    xv = f"x-{vendor}"
    return CoreWire(profile=profile, vendor=vendor, errors=ERRORS[profile](xv),
                    entities=ENTITIES[profile](xv), auth=AUTH[profile](xv),
                    docs=DOCS[profile](xv))
