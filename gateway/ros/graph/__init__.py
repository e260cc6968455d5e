"""The ROS graph: snapshots, queries, change notices, the participant census, nodes the rmw cannot name."""
