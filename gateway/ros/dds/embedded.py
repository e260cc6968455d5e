"""The ROS 2 distribution, RMW and DDS the gateway embeds, read from its installed wheels."""

from __future__ import annotations

import functools
import glob
import os
import sys
from importlib import metadata

# rclpy's major version per distribution (each distribution releases its own major), used when
# no `ros-<distro>-rclpy` meta-wheel names the distribution.
_RCLPY_MAJOR_DISTRO = {3: "humble", 7: "jazzy", 9: "kilted"}
# The DDS implementation each Fast DDS based RMW loads: its wheel, by major release.
_DDS_WHEELS = (("ros-fastdds", "Fast DDS"), ("ros-fastrtps", "Fast DDS"))
_NOT_RMW = {"ros-rmw-implementation", "ros-rmw-dds-common", "ros-rmw-security-common",
            "ros-rmw-fastrtps-shared-cpp", "ros-rmw-implementation-cmake"}


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _names() -> list[str]:
    return sorted({(d.metadata["Name"] or "").lower().replace("_", "-")
                   for d in metadata.distributions()} - {""})


@functools.cache
def distro(paths: tuple[str, ...] | None = None) -> str | None:
    """The ROS 2 distribution of the rclpy installed in `paths` (default sys.path); None: no
    rclpy or an unknown release."""
    search = list(sys.path if paths is None else paths)
    for entry in search:  # a `ros-<distro>-rclpy` meta-wheel names it
        for found in sorted(glob.glob(os.path.join(entry or ".", "ros_*_rclpy-*.dist-info"))):
            return os.path.basename(found).split("_")[1]
    found_rclpy = next(iter(metadata.distributions(name="ros-rclpy", path=search)), None)
    if found_rclpy is None:
        return None
    return _RCLPY_MAJOR_DISTRO.get(int(found_rclpy.version.split(".")[0]))


def _loaded_rmw() -> str | None:
    """The RMW rclpy loaded (None before rclpy is imported: it is never imported from here)."""
    rclpy = sys.modules.get("rclpy")
    try:
        return str(rclpy.get_rmw_implementation_identifier()) if rclpy is not None else None
    except Exception:  # rclpy present but its native part not loadable: the metadata answers
        return None


@functools.cache
def ros_versions() -> dict[str, str | None]:
    """Distribution, rclpy, RMW and DDS of this interpreter (names and versions from metadata)."""
    rmw = _loaded_rmw() or os.environ.get("RMW_IMPLEMENTATION") or next(
        (n.removeprefix("ros-").replace("-", "_") for n in _names()
         if n.startswith("ros-rmw-") and n not in _NOT_RMW), None)
    rmw_version = _version("ros-" + rmw.replace("_", "-")) if rmw else None
    dds_name, dds_version = None, None
    for wheel, name in _DDS_WHEELS:
        dds_version = _version(wheel)
        if dds_version is not None:
            dds_name = name
            break
    return {"ros_distro": distro(), "rclpy_version": _version("ros-rclpy"),
            "rmw_implementation": rmw, "rmw_version": rmw_version,
            "dds_implementation": dds_name, "dds_version": dds_version}
