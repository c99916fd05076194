"""`caerus backtest`: event-driven, deterministic replay of book events through the fleet's own decision code.

Modules, one reason to change each: ``events`` (the columnar book events every source yields), ``sources``
(session folder, chDB store, ClickHouse, the emulator's market model offline), ``latency`` (feed and order
latency drawn from a session's measured histograms, or constants), ``fills`` (IOC against the target venue's book
at arrival, fees), ``engine`` (the replay loop around caerus.strategy's LatencyArb / Desk), ``results`` (PnL,
markouts, hit rate, turnover, drawdown), ``report`` (JSON + HTML), ``sweep`` (parameter grids in worker
processes) and ``app`` (the CLI).
"""
