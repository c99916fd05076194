"""The venue kit: the bases every venue package (caerus.venues.<venue>) builds on, below the venues.

Market data: the feed loop's base with its per-instrument book state and lanes (``feed_loop``), the outputs it
writes besides the hot path's record (``feed_outputs``), top-of-book validation rules (``book_rules``) and frame
vocabulary (``frames``). Order entry: the transport protocol and order records (``order_transport``), the live
TLS WebSocket order session and start-up guards (``order_session``), the account-stream ledger
(``account_stream``) and credentials handling (``credentials``). What a venue tells generic code: ``spec``.

The seam runs one way: venues import the kit, the feed and execution processes import the venues (through the
registry their apps consult), and nothing here imports a venue, the feed or execution (.importlinter).
"""
