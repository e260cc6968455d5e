"""Wire profiles: one internal model, rendered at the edge in the spec's or the reference's shapes.

Each serializer module holds the shapes of one resource: a `Spec...` class with the spec's shapes
and every coexisting field, and a `Medkit...` subclass overriding only the CONFLICT rows of
medkit-wire.md. The core shapes live here (`_base.py`, errors, entities, docs, auth, bodies);
a feature keeps its own in its package (`gateway/<feature>/wire.py`). `core.py` bundles the core
shapes of the configured profile (`CoreWire`, the hub's `state.wire`); a feature's come through
`state.serializer(TABLE)`. The tests bundle every resource's (`tests/wire_bundle.py`).
"""
