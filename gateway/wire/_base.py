"""The common base of every resource serializer."""

from __future__ import annotations

# The names the gateway prints for itself (root `name`, `vendor_info.name`, operation
# `source`), per profile: the medkit profile uses the reference's, which its clients show.
PRODUCT_NAMES = {
    "spec": {"product": "diag-gateway", "vendor": "diag-gateway", "source": "diag-gateway"},
    "medkit": {"product": "ROS 2 Medkit Gateway", "vendor": "ros2_medkit",
               "source": "ros2_medkit_gateway"},
}


class WireBase:
    """A serializer that writes vendor keys as `xv` (e.g. x-vendor)."""

    profile = "spec"

    def product_name(self, which: str) -> str:
        """The gateway's `product`, `vendor` or `source` name in this profile."""
        return PRODUCT_NAMES[self.profile][which]

    def __init__(self, xv: str) -> None:
        self.xv = xv
