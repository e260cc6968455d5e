"""The gateway's Fast DDS participant profile: types matched by name, whatever the vendor.

ROS 2 matches topics across DDS vendors by type name. Fast DDS 3 also compares the XTypes type
information a writer sends; a Cyclone DDS writer's information for any type holding a sequence
of structures (diagnostic_msgs/DiagnosticArray, rmw_dds_common's `ros_discovery_info`) is not
resolved, and the writer is never matched: such topics stay silent and the robot's node list
never arrives, so its nodes are not named. The participant property
`fastdds.type_propagation=disabled` makes Fast DDS match by name, as Fast DDS 2 and Cyclone do.

`prepare()` runs before the first participant exists (rclpy reads the profile file when it
makes one, at start and at every rejoin). A profile file the user set in
`FASTDDS_DEFAULT_PROFILES_FILE` is kept as it is; when it does not set the property, one log
line says what a Cyclone robot then loses and how to add it.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

PROFILE_VAR = "FASTDDS_DEFAULT_PROFILES_FILE"
PROPERTY = "fastdds.type_propagation"
GATEWAY_PROFILE = Path(__file__).with_name("fastdds_gateway.xml")


def prepare(match_by_name: bool, environ: dict[str, str] | os._Environ[str] | None = None
            ) -> str:
    """Point the process's Fast DDS at the gateway's profile unless the user chose one; what
    was done, in words (also logged)."""
    env = os.environ if environ is None else environ
    if not match_by_name:
        return "types matched by XTypes information (ros.dds.match_types_by_name=false)"
    user = env.get(PROFILE_VAR)
    if not user:
        env[PROFILE_VAR] = str(GATEWAY_PROFILE)
        return "types matched by name (Fast DDS profile of the gateway)"
    try:
        text = Path(user).read_text(errors="replace")
    except OSError as exc:
        log.warning("%s=%s cannot be read (%s): Fast DDS will refuse it", PROFILE_VAR, user,
                    exc.strerror or exc)
        return f"profile {user} unreadable"
    if PROPERTY in text:
        return f"profile {user} (sets {PROPERTY})"
    log.warning("%s=%s does not set the participant property %s: topics of Cyclone DDS robots "
                "whose types hold sequences of structures (/diagnostics among them) and their "
                "node names are not received; add <property><name>%s</name><value>disabled"
                "</value></property> to its participant profile (see %s)", PROFILE_VAR, user,
                PROPERTY, PROPERTY, GATEWAY_PROFILE)
    return f"profile {user} (without {PROPERTY})"
