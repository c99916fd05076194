"""Shared test building blocks that start nothing: record builders and small helpers every test area uses.

Fixtures that start servers live in tests/fixtures/ (registered as plugins by the root conftest); tests/kit/ is plain
code, importable by unit and integration tests alike.
"""
