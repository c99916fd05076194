"""Naming the market a session ran, from ``env.json``'s ``market`` record (caerus.session.replay_dataset writes it).

A replay of a real capture says what is real and what is modelled: the Binance side's true venue, product,
symbol, files, recording dates, the recorder's clock offset and how much of it played; the Hyperliquid side's model
and every setting it used. A session on the market model says which market and seed; a live session says so.
Pure functions of the record: the report header and the session's console line both read them.
"""

from __future__ import annotations

from typing import Any


def _n(x: Any) -> str:
    return f"{x:,}" if isinstance(x, int) else "-"


def _binance(b: dict[str, Any], played: dict[str, Any] | None, ended: bool) -> str:
    parts = []
    for f in b.get("files") or []:
        when = f.get("recorded_from") or "-"
        if f.get("recorded_to"):
            when += f" to {f['recorded_to']}"
        extra = [x for x in (f"{f['span_s']} s" if f.get("span_s") else None,
                             f"{_n(f['book_frames'])} bookTicker frames" if f.get("book_frames") else None) if x]
        parts.append(f"{f.get('name')}, recorded {when}" + (f" ({', '.join(extra)})" if extra else ""))
    text = f"binance {b.get('product', '?')} {', '.join(b.get('symbols') or [])}: " + "; ".join(parts)
    off = b.get("clock_offset_ns")
    if isinstance(off, int | float):
        text += (f"; the recorder's receive clock ran {abs(off) / 1e6:,.1f} ms "
                 f"{'behind' if off < 0 else 'ahead of'} the venue's (not used: frames are paced by receive stamps)")
    if played:
        text += (f"; played {played.get('from') or '-'} to {played.get('to') or '-'} ({played.get('span_s', '-')} s of "
                 f"the capture, {_n(played.get('frames'))} frames served"
                 f"{', to its end' if played.get('finished') else ''})")
    elif ended:  # the session ended without venue-sim's record of it
        text += "; how much played was not recorded"
    return text + ". Frames as the venue sent them, exchange times (E/T) retimed to the send time."


def _hyperliquid(h: dict[str, Any]) -> str:
    settings = h.get("settings") or {}
    shown = ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in settings.items())
    return (f"market `{h.get('market', '?')}`, seed {h.get('seed', '?')}: {h.get('model', 'modelled')}"
            + (f" ({shown})" if shown else "") + ". No Hyperliquid data was recorded with this capture.")


def market_rows(env: dict[str, Any] | None) -> list[list[str]]:
    """The report header's rows naming the market (none when the session has no market record)."""
    rec = (env or {}).get("market")
    if not isinstance(rec, dict):
        return []
    kind = rec.get("kind")
    if kind == "replay":
        rows = [["market", f"REPLAY of a real capture ({rec.get('dataset')}): Binance REAL, Hyperliquid MODELLED"],
                ["Binance (real)", _binance(rec.get("binance") or {}, rec.get("played"), "played" in rec)],
                ["Hyperliquid (modelled)", _hyperliquid(rec.get("hyperliquid") or {})]]
        if rec.get("not_played"):
            rows.append(["in the store, not played", "; ".join(rec["not_played"])])
        return rows
    return [["market", market_line(rec)]]


def market_line(rec: dict[str, Any] | None) -> str:
    """One line naming the market (the session prints it at start)."""
    if not isinstance(rec, dict):
        return "not recorded"
    kind = rec.get("kind")
    if kind == "replay":
        b = rec.get("binance") or {}
        files = ", ".join(f.get("name", "?") for f in b.get("files") or [])
        h = rec.get("hyperliquid") or {}
        return (f"REPLAY: Binance REAL (binance {b.get('product', '?')} {', '.join(b.get('symbols') or [])}, "
                f"{files}), Hyperliquid MODELLED (market `{h.get('market', '?')}`'s follower, seed "
                f"{h.get('seed', '?')})")
    if kind == "emulated":
        return (f"EMULATED: market `{rec.get('market')}`, seed {rec.get('seed')}, instruments "
                f"{', '.join(rec.get('instruments') or [])}; both venues modelled, no real market data")
    if kind == "live":
        return "LIVE venues: real market data (orders to the paper transport)"
    return str(kind)
