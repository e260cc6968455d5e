"""Scripts: the catalog (managed and uploaded), contained runs, the handlers and wire shapes."""
