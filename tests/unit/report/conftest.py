"""Synthetic session folders for the report tests."""

from tests.fixtures.report_sessions import two_sessions  # noqa: F401
