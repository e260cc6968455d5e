"""Service, action and parameter calls through the bridge."""
