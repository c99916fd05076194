"""strategy package."""
