"""Hot paths with a pure-Python twin: the compiled module when built, else the pure one.

``DIAG_GATEWAY_PURE=1`` forces the pure twins; ``MSGCONV_IMPL`` says which one is loaded
("compiled" or "pure"). A missing or stale compiled twin is reported with a RuntimeWarning.
The wire judge (``wire_judge``, ``WIREJUDGE_IMPL``) is the compiled twin or None: its plain
reference in http/hotwire.py serves then.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType


def _load_compiled(name: str) -> ModuleType | None:
    """The compiled twin ``name`` of this package, or None (with a warning) when absent."""
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except ImportError as exc:
        warnings.warn(
            f"{__name__}.{name} is not built ({exc}); using the slower pure-Python twin "
            "(build it with `pip install -e .` and a C compiler)",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    # In a source tree (the .pxd sits beside it) an editable build goes stale on edits.
    built = Path(module.__file__ or "")
    base = name[:-2]  # its pure parts: <base>_py.py and _<base>_*.py (setup.py TWINS)
    sources = [built.with_name(f"{name}.pxd"), built.with_name(f"{base}_py.py"),
               *built.parent.glob(f"_{base}_*.py")]
    if sources[0].exists() and any(
        s.exists() and s.stat().st_mtime > built.stat().st_mtime for s in sources
    ):
        warnings.warn(
            f"{__name__}.{name} is older than its sources: rebuild with `pip install -e .`",
            RuntimeWarning,
            stacklevel=3,
        )
    return module


# The pure twin is imported only when it serves (its tables cost about 2 MiB).
_compiled = None
if os.environ.get("DIAG_GATEWAY_PURE", "").strip().lower() not in ("1", "true", "yes"):
    _compiled = _load_compiled("msgconv_c")
msgconv: ModuleType
if _compiled is not None:
    msgconv, MSGCONV_IMPL = _compiled, "compiled"
else:
    from . import msgconv_py

    msgconv, MSGCONV_IMPL = msgconv_py, "pure"

# The wire judge (http/hotwire.py) has a plain reference there; only the compiled twin serves.
_wirejudge = None
if _compiled is not None:
    _wirejudge = _load_compiled("wirejudge_c")
wire_judge: Callable[[bytes], str | None] | None = (
    None if _wirejudge is None else _wirejudge.judge)
WIREJUDGE_IMPL = "compiled" if _wirejudge is not None else "plain"

CdrError: type[ValueError] = msgconv.CdrError
UnknownTypeError: type[ValueError] = msgconv.UnknownTypeError
Converter = msgconv.Converter
cdr_to_json = msgconv.cdr_to_json
converter_for = msgconv.converter_for
converter_for_definition = msgconv.converter_for_definition

__all__ = [
    "MSGCONV_IMPL",
    "WIREJUDGE_IMPL",
    "CdrError",
    "Converter",
    "UnknownTypeError",
    "cdr_to_json",
    "converter_for",
    "converter_for_definition",
    "msgconv",
    "wire_judge",
]
