"""The SQL caerus.data runs: one text for both engines (chDB's ClickHouse and a ClickHouse server down to 18.16).

Every query reads ``caerus.books FINAL`` (ReplacingMergeTree: a batch the sink or capture inserted twice shows once)
for one session at a time and returns numeric columns only: the venue as its Enum8 code and the instrument as its
UInt16 id. Names (session, venue, symbol) are attached afterwards as dictionary columns (frames.py), which costs
nothing per row, where strings from the engine cost about a third of an export.

The as-of alignment (:func:`aligned`) is computed in the engine. ClickHouse 18.16 has no ``ASOF JOIN`` (it came in
19.x), so the match is made with array functions both engines have (groupArray, arraySort, arrayCumSum, arrayFilter,
arrayMap, ARRAY JOIN), per instrument:

1. the base venue's rows of the slice, the other venue's rows of the slice, and the other venue's last row before
   the slice are gathered as one array per column;
2. a permutation sorts them by (t_recv, side, seq), the other venue's rows first at an equal receive time (a book
   received at the same instant is already known);
3. a running count of other-venue rows along that order is, at each base row, the rank of the newest other-venue
   book received at or before it (0: none yet);
4. both rows' columns are gathered by index and ARRAY JOIN turns the arrays back into rows; rank 0 gives NULLs.

18.16 loses a column captured only inside a lambda when it prunes a subquery's columns ("Unknown identifier"), so
each level that captures arrays also names them in a WHERE that is always true (``length(x) >= 0``).
"""

from __future__ import annotations

from collections.abc import Sequence

DATABASE = "caerus"
BOOKS = f"{DATABASE}.books"

# Columns of a book row as the engine returns them (beside venue and symbol), in output order.
PAYLOAD = ("flags", "reason", "conn", "seq", "t_exchange", "t_recv", "t_publish", "t_wire",
           "bid_px", "bid_qty", "ask_px", "ask_qty")
BOOK_SELECT = ("toInt8(venue) AS venue_code", "symbol", *PAYLOAD)  # not "AS venue": WHERE would see it
TIME_COLUMNS = ("t_exchange", "t_recv", "t_publish", "t_wire")


def quote(text: str) -> str:
    """A ClickHouse string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _filter(session: str, venues: Sequence[str] | None, symbol_ids: Sequence[int] | None,
            start: int | None, end: int | None) -> str:
    """``PREWHERE <key conditions> WHERE session = ...``: the conditions on sorting-key columns (venue, symbol,
    t_recv) as PREWHERE, so a time slice reads the other columns only of the granules that hold its rows instead of
    the whole table (neither engine moves a condition to PREWHERE by itself under FINAL; measured: 10^7 rows in
    five slices, 12.5 -> 6.2 CPU-s). Exact under FINAL: rows it collapses share every key column, so a key condition
    keeps all of them or none. ``session`` is not a key column and stays in WHERE, after FINAL."""
    key: list[str] = []
    if venues is not None:
        key.append("venue IN (" + ", ".join(quote(v) for v in venues) + ")")
    if symbol_ids is not None:
        key.append("symbol IN (" + ", ".join(str(int(i)) for i in symbol_ids) + ")")
    if start is not None:
        key.append(f"t_recv >= {int(start)}")
    if end is not None:
        key.append(f"t_recv < {int(end)}")
    pre = f"PREWHERE {' AND '.join(key)} " if key else ""
    return f"{pre}WHERE session = {quote(session)}"


def has_books() -> str:
    """1 when the store has the books table (a store created by capture always has it)."""
    return f"SELECT count() FROM system.tables WHERE database = {quote(DATABASE)} AND name = 'books'"


def session_names() -> str:
    """The sessions a store holds."""
    return f"SELECT DISTINCT session FROM {BOOKS} ORDER BY session"


def inventory() -> str:
    """One row per (session, venue, symbol id): rows, rejected rows, first and last receive time."""
    return (f"SELECT session, toInt8(venue) AS venue_code, symbol, count() AS rows, "
            f"sum(bitAnd(flags, 32) != 0) AS rejected, min(t_recv) AS t_first, max(t_recv) AS t_last "
            f"FROM {BOOKS} FINAL GROUP BY session, venue, symbol ORDER BY session, venue, symbol")


def extent(session: str, venues: Sequence[str] | None, symbol_ids: Sequence[int] | None,
           start: int | None, end: int | None) -> str:
    """Row count, receive-time range and highest symbol id of a selection (to plan the slices)."""
    return (f"SELECT count(), min(t_recv), max(t_recv), max(symbol) FROM {BOOKS} FINAL "
            f"{_filter(session, venues, symbol_ids, start, end)}")


def books(session: str, venues: Sequence[str] | None, symbol_ids: Sequence[int] | None,
          start: int | None, end: int | None) -> str:
    """The book rows of one session in [start, end) of t_recv, in receive order."""
    return (f"SELECT {', '.join(BOOK_SELECT)} FROM {BOOKS} FINAL "
            f"{_filter(session, venues, symbol_ids, start, end)} ORDER BY t_recv, venue, symbol, seq")


def aligned(session: str, base: str, other: str, symbol_ids: Sequence[int] | None,
            start: int | None, end: int | None) -> str:
    """Every ``base`` book of [start, end) with the ``other`` venue's newest book received at or before it.

    Columns: symbol, the base row's PAYLOAD, then ``other_<c>`` for each PAYLOAD column (NULL when the other venue
    had no book of that instrument yet); in receive order.
    """
    cols = ", ".join(PAYLOAD)
    sliced = [
        f"SELECT symbol, toUInt8(1) AS side, {cols} FROM {BOOKS} FINAL "
        f"{_filter(session, (base,), symbol_ids, start, end)}",
        f"SELECT symbol, toUInt8(0) AS side, {cols} FROM {BOOKS} FINAL "
        f"{_filter(session, (other,), symbol_ids, start, end)}",
    ]
    if start is not None:
        # The other venue's newest book before the slice, per instrument: found by its key (max over two columns,
        # cheap), then read whole.
        before = _filter(session, (other,), symbol_ids, None, start)
        sliced.append(
            f"SELECT symbol, toUInt8(0) AS side, {cols} FROM {BOOKS} FINAL "
            f"{before} AND (symbol, t_recv, seq) IN "
            f"(SELECT symbol, tupleElement(k, 1), tupleElement(k, 2) FROM "
            f"(SELECT symbol, max((t_recv, seq)) AS k FROM {BOOKS} FINAL {before} "
            f"GROUP BY symbol))")
    g = [f"g_{c}" for c in PAYLOAD]
    grouped = ", ".join(f"groupArray({c}) AS g_{c}" for c in (*PAYLOAD, "side"))
    gather = ", ".join(f"arrayMap(i -> g_{c}[i], bi) AS b_{c}, arrayMap(i -> g_{c}[i], oi) AS o_{c}"
                       for c in PAYLOAD)
    keep = " + ".join(f"length({x})" for x in g)
    joined = ", ".join(f"b_{c} AS {c}, o_{c} AS x_{c}" for c in PAYLOAD)
    out = ", ".join(["symbol", *PAYLOAD, *(f"if(x_i = 0, NULL, x_{c}) AS other_{c}" for c in PAYLOAD)])
    return f"""SELECT {out} FROM (
 SELECT symbol, oi, {gather} FROM (
  SELECT symbol, {', '.join(g)}, arrayFilter((i, s) -> s = 1, perm, sides) AS bi,
   arrayMap(c -> if(c = 0, 0, op[c]), arrayFilter((c, s) -> s = 1, arrayCumSum(arrayMap(s -> 1 - s, sides)), sides))
    AS oi
  FROM (
   SELECT symbol, {', '.join(g)}, perm, arrayMap(i -> g_side[i], perm) AS sides,
    arrayFilter(i -> g_side[i] = 0, perm) AS op
   FROM (
    SELECT symbol, {', '.join(g)}, g_side,
     arraySort((i, t, s, q) -> (t, s, q), arrayEnumerate(g_side), g_t_recv, g_side, g_seq) AS perm
    FROM (SELECT symbol, {grouped} FROM ({' UNION ALL '.join(sliced)}) GROUP BY symbol)
   ) WHERE length(g_side) >= 0
  ) WHERE length(op) >= 0
 ) WHERE length(bi) + length(oi) + {keep} >= 0
) ARRAY JOIN {joined}, oi AS x_i
ORDER BY t_recv, symbol, seq"""



# books_named's query settings, kept apart from its text so an engine that adds clauses after the SELECT (INTO
# OUTFILE, FORMAT) composes them in order, never by searching the text for " SETTINGS " (a session name may hold
# it inside a string literal: issue 44). prefer_column_name_to_alias: ``symbol`` inside the expressions is the
# subquery's id, not the name made there.
BOOKS_NAMED_SETTINGS: dict[str, str | int] = {"prefer_column_name_to_alias": 1}


def settings_clause(settings: dict[str, str | int]) -> str:
    """``SETTINGS k = v, ...`` (strings quoted as literals); empty for no settings."""
    if not settings:
        return ""
    bad = [k for k in settings if not k.isidentifier()]
    if bad:
        raise ValueError(f"not ClickHouse setting names: {bad}")
    return "SETTINGS " + ", ".join(f"{k} = {quote(v) if isinstance(v, str) else int(v)}" for k, v in settings.items())


def books_named(session: str, venues: Sequence[str] | None, symbol_ids: Sequence[int] | None,
                start: int | None, end: int | None, venue_names: Sequence[str], symbol_names: Sequence[str]) -> str:
    """:func:`books`' rows with caerus.data.books' columns made in the engine (for an engine that writes the file
    itself, chDB's ``INTO OUTFILE ... FORMAT Parquet``): ``session``, ``venue`` and ``symbol`` as LowCardinality
    strings (``venue_names``/``symbol_names`` indexed by code, so they must cover every code the rows hold), each ns
    time followed by its ``*_ts`` DateTime64(9, 'UTC') (``t_wire_ts`` NULL for 0).

    The names and timestamps are made outside the sorted subquery: sorting the raw numeric row and naming it
    afterwards took 10.4 CPU-s against 13.3 for sorting the named row (10^7 rows, parquet written). Names are
    looked up in a constant LowCardinality array, never built as a string per row.

    The query needs :data:`BOOKS_NAMED_SETTINGS`, which it does not carry: the caller adds them after its own
    clauses (:meth:`caerus.data.engines.ChdbEngine.write_file`)."""
    def lookup(names: Sequence[str], code: str) -> str:
        return (f"arrayElement(CAST([{', '.join(quote(n) for n in names)}] AS Array(LowCardinality(String))), "
                f"{code} + 1)")

    cols = [f"toLowCardinality({quote(session)}) AS session", f"{lookup(venue_names, 'venue_code')} AS venue",
            f"{lookup(symbol_names, 'symbol')} AS symbol", "symbol AS symbol_id"]
    for c in PAYLOAD:
        cols.append(c)
        if c in TIME_COLUMNS:
            ts = f"fromUnixTimestamp64Nano({c}, 'UTC')"
            cols.append(f"if({c} = 0, NULL, {ts}) AS {c}_ts" if c == "t_wire" else f"{ts} AS {c}_ts")
    return f"SELECT {', '.join(cols)} FROM ({books(session, venues, symbol_ids, start, end)})"
