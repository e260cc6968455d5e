"""A raw writer of a DDS topic outside the ROS name space (for what other distributions'
participants send, e.g. a Humble-layout `ros_discovery_info`)."""

from gateway.ros.dds._rawtopic import RawTopicWriter

__all__ = ["RawTopicWriter"]
