"""unit/execution tests."""
