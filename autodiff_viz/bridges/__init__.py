"""bridges: see docs/architecture.md."""
