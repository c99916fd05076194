"""Venue connections: single-use TLS WebSocket sessions, their supervisor, pacing and the failure taxonomy."""
