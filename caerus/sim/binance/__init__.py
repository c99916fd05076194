"""The emulated Binance USD-M futures venue: its server (server), REST market data (rest), signed REST trading
(trading), WebSocket API (ws_api) over conditional orders (algo), orders (orders) and authentication (auth).
Built on caerus.sim.core; never imports caerus.sim.hyperliquid."""
