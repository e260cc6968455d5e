"""Re-joining DDS: node proxies, the frozen-participant and hearing checks, their probes."""
