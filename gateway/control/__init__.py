"""Acting on the robot: lock rules, script catalog and runner, lifecycle transition plans."""
