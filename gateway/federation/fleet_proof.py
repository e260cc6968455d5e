"""Fleet proof (pure): a gateway holding `aggregation.fleet_secret` proves it to a primary.

The primary sends a fresh random nonce; the peer answers HMAC-SHA256(secret, label || nonce
|| the name it announces). Bound to the name, a proof relayed from another peer of the fleet
does not pass for a name that peer does not announce. A relay to the real peer of the same
name still passes: only TLS with a fleet CA would stop that (not built).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import socket
from typing import TYPE_CHECKING, Any

from .settings import AggregationSettings, peer_name

if TYPE_CHECKING:
    from ..settings.config import Settings

NONCE_BYTES = 16
PROOF_BODY_CAP = 4096
# Domain separation: a proof is never an HMAC the same secret makes elsewhere (a robot's
# connect token is HMAC(robot key, name), older ones HMAC(connect_token, name)).
LABEL = b"fleet-proof\x00"
PATH = "/x-{vendor}-fleet-proof"
_HEX = frozenset("0123456789abcdefABCDEF")


def new_nonce() -> str:
    """A fresh random nonce, hex (NONCE_BYTES bytes)."""
    return secrets.token_hex(NONCE_BYTES)


def proof(secret: str, nonce: str, name: str) -> str:
    """HMAC-SHA256(secret, LABEL || nonce bytes || name), hex."""
    message = LABEL + bytes.fromhex(nonce) + name.encode("utf-8")
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def proves(secret: str, nonce: str, name: str, answer: Any) -> bool:
    """True when `answer` (the decoded body) holds the proof for `name` (constant time)."""
    if not isinstance(answer, dict):
        return False
    given = answer.get("proof")
    if not isinstance(given, str):
        return False
    return hmac.compare_digest(given.encode("ascii", "replace"),
                               proof(secret, nonce, name).encode("ascii"))


def valid_nonce(text: str) -> bool:
    """A nonce of exactly NONCE_BYTES bytes in hex."""
    return len(text) == 2 * NONCE_BYTES and all(c in _HEX for c in text)


def own_name(settings: Settings) -> str:
    """The name this gateway announces (aggregation.mdns_name, else the host name)."""
    return peer_name(settings.typed(AggregationSettings.from_settings).mdns_name
                     or socket.gethostname())
