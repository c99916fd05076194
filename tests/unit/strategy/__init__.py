"""unit/strategy tests."""
