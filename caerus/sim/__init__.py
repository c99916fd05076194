"""Venue emulator: Binance USD-M and Hyperliquid TLS WebSocket servers on loopback for tests and local sessions.

Modules: market (seeded price model; settings in market_config, presets in markets/, mechanisms in follower and
regime, offline runs in offline), frames (wire text), driver (real-time playback of the model), replay
(recorded frames), scenarios (named faults), hub (fan-out + per-connection faults), binance / hyperliquid
(servers), tls (CA + certificates), config, emulator (VenueEmulator, EmulatorThread), app (`caerus venue-sim`),
order_entry (bridge to orders.py, the order-entry logic owned by the signing/transports side).
See docs/emulator.md.
"""
