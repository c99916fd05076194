"""Caerus: a low-latency market-data and execution fleet for the Binance USD-M x Hyperliquid BTC perpetual lag."""

__version__ = "0.1.0"
