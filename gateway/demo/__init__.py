"""Demo robot: a small vehicle of real rclpy nodes, one OS process each (see robot.py)."""
