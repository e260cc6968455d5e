"""JSON Schema checks that cannot hang: bounded schemas, RE2 patterns, validation in worker processes."""
