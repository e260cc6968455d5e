"""Lifecycle: transition plans (pure), the built-in provider over lifecycle_msgs, the handlers."""
