"""Latency profiles shipped with the package (``*.json``): the backtest's and the verdict's default latency,
read by caerus.research.backtest.latency, built by caerus.research.backtest.profile from a real session."""
