"""diagnosis: see docs/architecture.md."""
