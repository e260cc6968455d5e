"""The ROS bridge's settings (`ros.*`, the sizes and budgets of its services), read once."""

from __future__ import annotations

from dataclasses import dataclass

from ..settings.typed import TableSettings


@dataclass(frozen=True)
class RosSettings(TableSettings):
    """The `ros.*` settings: the node, DDS, rejoin, type sources and limits, the service clients."""

    PREFIX = "ros."

    domain_id: int
    node_name: str
    dds_match_types_by_name: bool
    rejoin_enabled: bool
    rejoin_min_interval_sec: float
    interface_paths: tuple[str, ...]
    type_limits_max_depth: int
    type_limits_max_fixed_elements: int
    type_limits_max_read_bytes: int
    type_limits_max_encode_bytes: int
    type_limits_max_build_bytes: int
    type_limits_encode_timeout_sec: float
    interface_paths_from_shell: bool
    type_build_on_discovery: bool
    type_build_cache_max_mb: int
    type_build_cache_max_age_days: float
    executor: str
    service_replies: str
    service_client_idle_sec: float


@dataclass(frozen=True)
class RosServiceSettings(TableSettings):
    """The sizes and budgets of the bridge's services: samples, service and parameter calls, /rosout."""

    PREFIX = ""

    topic_sample_timeout_sec: float
    data_pool_cap: int
    service_call_timeout_sec: float
    operations_max_in_flight_per_service: int
    parameter_service_timeout_sec: float
    parameter_negative_cache_sec: float
    logs_buffer_size: int
