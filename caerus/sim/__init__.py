"""Venue emulator: Binance USD-M and Hyperliquid TLS WebSocket servers on loopback for tests and local sessions.

Laid out like the venues it imitates, in three tiers (imports run downward only; .importlinter's sim-layers):
* top: app (`caerus venue-sim`), emulator (VenueEmulator, EmulatorThread: both servers, the driver, the scenario
  wiring), protocols (extra venues' servers), orders (the order-entry entry point over both venues' order handling);
* binance/, hyperliquid/: one package per venue (server, REST, order handling, ...), neither importing the other;
* core/: what both venues share: the market model (market, market_config, follower, regime, offline, catalogue;
  presets in markets/), its real-time playback (driver, frames, depth, tape, marks, instrument_feeds, lateness),
  the fan-out (hub, scenarios), replays (replay, capture_file, replay_market), the order desk (desk, ledger,
  price_band, verify, order_entry) and the serving plumbing (config, http, tls).
See docs/emulator.md.
"""
