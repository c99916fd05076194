"""venues package."""
