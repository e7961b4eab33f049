"""The core: tensors, the engine, the rule table, the walks, and the numpy surface (see docs/architecture.md)."""
