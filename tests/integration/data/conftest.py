"""caerus.data's fixtures: session rings for the store capture writes."""

from tests.fixtures.capture_rings import session_rings  # noqa: F401
