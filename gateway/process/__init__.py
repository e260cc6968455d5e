"""Process-level tuning: event-loop lag and slice, GC policy, malloc arenas, a bounded exit,
the state directory lock, deferred imports, state file modes."""
