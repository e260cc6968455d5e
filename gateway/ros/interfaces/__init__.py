"""ROS interface types: import, JSON conversion and schemas, run-time builds, other prefixes."""
