"""The execution process: consumes the order ring, runs risk checks, sends through a transport (null, paper, live
venue) and publishes EXEC records.
"""
