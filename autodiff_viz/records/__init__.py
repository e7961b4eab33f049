"""records: see docs/architecture.md."""
