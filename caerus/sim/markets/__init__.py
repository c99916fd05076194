"""Market presets for the venue emulator (``venue-sim --market NAME``): one TOML file per market, loaded by
caerus.sim.core.market_config.load_market. ``default`` is the emulator's market; ``fixed-lag`` is the model before issue
27 (Hyperliquid copies Binance's fair price a fixed lag later, whole)."""
