-- Caerus capture tables: one definition for chDB (ClickHouse 26.9, embedded store) and for the ClickHouse server
-- the sink inserts into (Debian clickhouse-server 18.16 and newer). Only syntax both accept is used: Enum8,
-- Int64 nanosecond timestamps (18.16 has no DateTime64), no LowCardinality, no codecs, no TTL.
-- ReplacingMergeTree keyed on (venue, sequence, receive time) makes a re-inserted batch collapse into the rows it
-- repeats: query with FINAL (or GROUP BY the key) to see each row once before background merges ran.
-- Statements are separated by ';' at line ends (18.16's HTTP interface takes one statement per request).
-- Enum values mirror caerus/wire.py (Venue, EventKind); tests/unit/capture checks they stay in step.

CREATE DATABASE IF NOT EXISTS caerus;

CREATE TABLE IF NOT EXISTS caerus.books
(
    session String,
    venue Enum8('unknown' = 0, 'binance' = 1, 'hyperliquid' = 2),
    flags UInt8,
    symbol UInt16,
    conn UInt16,
    reason UInt8,
    seq Int64,
    t_exchange Int64,
    t_recv Int64,
    t_publish Int64,
    bid_px Float64,
    bid_qty Float64,
    ask_px Float64,
    ask_qty Float64,
    t_wire Int64
)
ENGINE = ReplacingMergeTree()
ORDER BY (venue, symbol, seq, t_recv);

CREATE TABLE IF NOT EXISTS caerus.orders
(
    session String,
    order_id Int64,
    strategy_id UInt16,
    venue Enum8('unknown' = 0, 'binance' = 1, 'hyperliquid' = 2),
    side Int8,
    tif UInt8,
    reason UInt8,
    trigger_venue Enum8('unknown' = 0, 'binance' = 1, 'hyperliquid' = 2),
    flags UInt8,
    px Float64,
    qty Float64,
    trigger_seq Int64,
    trigger_t_recv Int64,
    trigger_t_publish Int64,
    t_seen Int64,
    t_decision Int64,
    seq Int64,
    trigger_t_wire Int64,
    symbol UInt32,
    t_pickup Int64,
    t_sent Int64,
    outcome UInt8,
    risk UInt8,
    venue_code Int32,
    fill_px Float64,
    fill_qty Float64
)
ENGINE = ReplacingMergeTree()
ORDER BY (venue, order_id, t_decision);

CREATE TABLE IF NOT EXISTS caerus.fills
(
    session String,
    order_id Int64,
    venue Enum8('unknown' = 0, 'binance' = 1, 'hyperliquid' = 2),
    side Int8,
    outcome UInt8,
    px Float64,
    qty Float64,
    t_decision Int64,
    t_sent Int64
)
ENGINE = ReplacingMergeTree()
ORDER BY (venue, order_id, t_sent);

CREATE TABLE IF NOT EXISTS caerus.feed_events
(
    session String,
    venue Enum8('unknown' = 0, 'binance' = 1, 'hyperliquid' = 2),
    kind Enum8('CONNECTING' = 1, 'CONNECTED' = 2, 'SUBSCRIBED' = 3, 'DISCONNECTED' = 4, 'ROTATION_STARTED' = 5,
               'ROTATION_DONE' = 6, 'STALE' = 7, 'BOOK_REJECTED' = 8, 'FRAME_DROPPED' = 9),
    code UInt16,
    conn UInt32,
    t_ns Int64,
    value Int64,
    aux Int64
)
ENGINE = ReplacingMergeTree()
ORDER BY (venue, conn, t_ns, kind, code);
