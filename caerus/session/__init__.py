"""session package."""
