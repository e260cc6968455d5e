"""Script error shapes: the vendor codes of script refusals."""

from __future__ import annotations

from typing import Any

from ..errors import VENDOR_ERROR, ApiError
from ..wire._base import WireBase

# The spec's script codes and the reference's (medkit-wire.md section 1.1); the reference's
# x-medkit- codes carry the configured vendor word.
MEDKIT_CODES = {
    "script-file-too-large": "x-vendor-script-too-large",
    "script-managed": "x-vendor-managed-script",
    "script-running": "x-vendor-script-running",
    "script-not-running": "x-vendor-script-not-running",
    "script-concurrency-limit": "x-vendor-concurrency-limit",
    "script-already-exists": "x-vendor-script-already-exists",
}


class SpecScripts(WireBase):
    """The spec's script codes (`script-managed`, ...) as vendor-error vendor codes."""

    def code(self, spec_code: str) -> str:
        """The vendor code of a script refusal named by the spec's code."""
        return spec_code

    def error(self, status: int, spec_code: str, message: str, **parameters: Any) -> ApiError:
        """A script refusal: vendor-error with the profile's vendor code."""
        return ApiError(status, VENDOR_ERROR, message, vendor_code=self.code(spec_code),
                        parameters=parameters or None)


class MedkitScripts(SpecScripts):
    """The reference's codes: x-medkit-managed-script, x-medkit-concurrency-limit, ..."""

    profile = "medkit"

    def code(self, spec_code: str) -> str:
        """The reference's vendor code (x-vendor- becomes the vendor word on the wire)."""
        return MEDKIT_CODES.get(spec_code, spec_code)


ScriptWire = SpecScripts
SCRIPTS: dict[str, type[SpecScripts]] = {"spec": SpecScripts, "medkit": MedkitScripts}
