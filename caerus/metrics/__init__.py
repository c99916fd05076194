"""Measurement off the hot path: HdrHistogram recording and .hlog/.hgrm files, environment probes, RSS sampling,
session summaries and caveats.
"""
