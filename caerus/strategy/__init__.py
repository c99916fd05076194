"""The strategy process: reads both venues' books from the rings and fires latency-arb (or bench) orders into the order
ring.
"""
