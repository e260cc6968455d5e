"""Software updates: the status and phase machine and the manager driving the provider."""
