"""The function graph and the graph watchdog: pure snapshot and detectors, and their plugins."""
