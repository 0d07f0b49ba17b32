"""The package's own constant-time targets (registered on import)."""
