"""Wire profiles: one internal model, rendered at the edge in the spec's or the reference's shapes.

Each module holds the serializers of one resource: a `Spec...` class with the spec's shapes and
every coexisting field, and a `Medkit...` subclass overriding only the CONFLICT rows of
medkit-wire.md. `Wire` bundles one instance per resource for the configured profile.
"""

from .profile import PROFILES, Wire, make_wire

__all__ = ["PROFILES", "Wire", "make_wire"]
