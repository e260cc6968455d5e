"""Push delivery: cyclic subscriptions, triggers and fault triggers over SSE."""
