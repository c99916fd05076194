"""`caerus backtest`: event-driven, deterministic replay of book events through the fleet's own decision code.

Modules, one reason to change each: ``events`` (the columnar book events every source yields), ``sources``
(session folder, chDB store, ClickHouse, the emulator's market model offline), ``latency`` (feed and order
latency drawn from the fleet's profile, a session's measured histograms, or constants; ZERO named; the latency
points), ``profile`` (building a latency profile file from a real session; the files live in ``profiles/``),
``fills`` (IOC against the target venue's book at arrival -- Hyperliquid's block clock, depletion by our own fills
-- and fees), ``engine`` (the replay loop around caerus.strategy's LatencyArb / Desk), ``results`` (PnL, markouts,
hit rate, turnover, drawdown), ``runner`` (one backtest and its latency points as a result document), ``report``
(HTML), ``observed`` / ``consistency`` (a session replayed with its own timing), ``sweep`` (parameter grids in
worker processes) and ``app`` (the CLI).
"""
