"""transports package."""
