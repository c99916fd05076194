"""Research: data access, market model fitting, features, models and the backtest, beside the strategy.

The live strategy and the backtest import the *same* feature and decision code (caerus.strategy); nothing is
re-implemented here. Nothing in the fleet imports this package (only the CLI does).
"""
