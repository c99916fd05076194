"""`caerus calibrate`: fit the emulator's market model (caerus.sim) from captured books.

estimators (pure numpy estimators), fit (books DataFrame -> market parameters with standard errors), app (CLI).
See docs/research.md, "Calibration".
"""
