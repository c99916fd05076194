"""The emulator's shared core: the market model and its playback, the fan-out, replays, the order desk and the
serving plumbing both venue packages (caerus.sim.binance, caerus.sim.hyperliquid) build on. It imports neither."""
