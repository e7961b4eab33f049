"""base: see docs/architecture.md."""
