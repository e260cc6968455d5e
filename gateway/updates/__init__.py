"""Software updates: the status and phase machine, the manager driving the provider, the handlers."""
