"""The emulated Hyperliquid venue: its server (server), subscriptions (subscriptions), HTTP API (rest) and order
handling (orders). Built on caerus.sim.core; never imports caerus.sim.binance."""
