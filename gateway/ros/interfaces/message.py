"""ROS 2 messages <-> JSON-ready dicts, JSON Schemas and default values per type.

Works on any generated rclpy class (messages and the request/response/goal/result/feedback
parts of services and actions) by walking ``get_fields_and_field_types()`` and ``SLOT_TYPES``.
Conversion plans are built once per class and cached, so a conversion is one closure call per
field.

JSON policy (project-wide):

- Floats: non-finite values (NaN, +inf, -inf) are JSON ``null``. ``message_to_dict`` keeps
  them as Python floats and orjson writes them as ``null``; ``to_jsonable`` replaces them with
  ``None`` for other encoders. On input, ``null`` in a float field means NaN (so a value read
  from the gateway can be written back); JSON integers are accepted for float fields.
- Integers: only JSON integers, range-checked by bit width (``3.0`` is not an integer).
- Booleans are strict both ways: ``true``/``false`` only for ``bool`` fields, never for
  integer or float fields, and ``0``/``1`` are not accepted for ``bool`` fields.
- ``byte`` (IDL ``octet``, rclpy ``bytes`` of length 1) is an integer 0..255; ``byte[]`` and
  ``uint8[]`` (fixed, bounded or unbounded) are arrays of integers 0..255.
- ``char`` in a ``.msg`` file is ``uint8`` in the generated IDL and an ``int`` in rclpy, so it
  is an integer 0..255 too. Only types written directly in ``.idl`` can hold IDL ``char`` /
  ``wchar``, which rclpy stores as one-character ``str``: those are one-character strings.
- Strings (``string`` and ``wstring``) are JSON strings. rclpy already replaces invalid UTF-8
  in received messages with U+FFFD; ``to_jsonable`` replaces lone surrogates with U+FFFD, and
  input strings holding lone surrogates are rejected. Bounds (``string<=N``) count code points,
  as rclpy does and as JSON Schema ``maxLength`` does.
- Fields absent from an input object keep their defaults; unknown fields are errors.
"""

from __future__ import annotations

from .msg_input import dict_to_message
from .msg_output import default_value, message_to_dict, to_jsonable
from .msg_schema import action_schemas, field_type_map, service_schemas, type_schema
from .msgtypes import MessageFieldError, UnknownTypeError, import_type, type_name_of

__all__ = [
    "MessageFieldError",
    "UnknownTypeError",
    "action_schemas",
    "default_value",
    "dict_to_message",
    "field_type_map",
    "import_type",
    "message_to_dict",
    "service_schemas",
    "to_jsonable",
    "type_name_of",
    "type_schema",
]
