"""feed package."""
