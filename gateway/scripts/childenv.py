"""The environment handed to code the gateway runs (scripts, update hooks): the user's
environment without the gateway's secrets.

Secrets are registered once the settings are resolved (`settings/secret_values.py`); every
child environment built afterwards drops variables whose name looks like a credential, whose value
holds a registered secret, or that configure the gateway itself.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

from ..settings.secret_values import MIN_SUBSTRING_LEN, registered_secrets

# Environment names that look like credentials; never handed to a child.
SECRET_NAME = re.compile(r"(SECRET|TOKEN|PASSW|PASSWD|CREDENTIAL|PRIVATE|API_?KEY|AUTH)",
                         re.IGNORECASE)


def scrubbed_env(environ: Mapping[str, str], secrets: Iterable[str]) -> dict[str, str]:
    """environ without credentials: names that look secret, values that hold a secret, and the
    gateway's own settings variables."""
    values = {s for s in secrets if s}
    long_values = [v for v in values if len(v) >= MIN_SUBSTRING_LEN]
    out: dict[str, str] = {}
    for key, value in environ.items():
        if SECRET_NAME.search(key) or key.startswith("DIAG_GATEWAY_"):
            continue
        if value in values or any(v in value for v in long_values):
            continue
        out[key] = value
    return out


def user_environment() -> dict[str, str]:
    """The environment of the user who started the gateway, before the gateway's own loader
    variables (os.environ when the ROS isolation helper is not available)."""
    try:
        from ..ros.dds import isolation  # noqa: PLC0415 - optional: the ROS isolation helper
    except ImportError:
        return dict(os.environ)
    getter = getattr(isolation, "user_environment", None)
    if getter is None:
        return dict(os.environ)
    return dict(getter())


def child_environment() -> dict[str, str]:
    """The user's environment minus every registered secret: what a child process gets."""
    return scrubbed_env(user_environment(), registered_secrets())


def ros_environment(domain_id: int) -> dict[str, str]:
    """What a child needs to reach the gateway's own robot: the ROS domain the gateway joined
    (`ros.domain_id`, -1: the environment's) and its discovery range."""
    out: dict[str, str] = {}
    if domain_id >= 0:
        out["ROS_DOMAIN_ID"] = str(domain_id)
    scope = os.environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE")
    if scope:
        out["ROS_AUTOMATIC_DISCOVERY_RANGE"] = scope
    return out
