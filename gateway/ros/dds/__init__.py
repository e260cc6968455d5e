"""The gateway's rclpy node and executor bridge, its DDS profile and ROS environment."""
