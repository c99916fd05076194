"""Capture's fixtures: session rings filled by the test, and the Kafka mock cluster (a topic of each test's own)."""

from tests.fixtures.capture_kafka import _kafka_process, kafka_topic, mock_kafka, own_mock_kafka  # noqa: F401
from tests.fixtures.capture_rings import session_rings  # noqa: F401
