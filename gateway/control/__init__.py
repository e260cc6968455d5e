"""Old addresses of the lock guard, kept until the data-read handler imports gateway.locks."""
