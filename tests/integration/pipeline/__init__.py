"""integration/pipeline tests."""
