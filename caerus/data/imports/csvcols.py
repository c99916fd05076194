"""Typed columns out of CSV text, fast (pyarrow's reader) when every value parses, row by row when one does not.

The CSV formats carry the same fields as the venues' messages, as text. A value that does not parse where a
decoder would refuse the message (a price that is not a number, an id out of range) makes that row MALFORMED,
counted and stored REJECTED like the feed's unreadable frame; the other rows of the chunk are unaffected. pyarrow
parses a whole chunk in C++; only a chunk holding a bad value is parsed again row by row to find it.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from caerus.venuekit.frames import _INT64_MAX

EPOCH_MS_MAX = _INT64_MAX // 1_000_000
KINDS = ("int", "float", "str", "bool")
_TYPES = {"int": pa.int64(), "float": pa.float64(), "str": pa.string(), "bool": pa.string()}


def parse(text: bytes, names: Sequence[str], kinds: Sequence[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Columns of ``text`` (header-less CSV lines) by name, and a per-row ``bad`` mask (a value that did not parse:
    its columns hold 0 / NaN / "" there). An empty numeric field is NaN (float) or flagged bad (int)."""
    try:
        tab = pacsv.read_csv(
            io.BytesIO(text),
            read_options=pacsv.ReadOptions(column_names=list(names), block_size=1 << 24),
            convert_options=pacsv.ConvertOptions(column_types={n: _TYPES[k] for n, k in zip(names, kinds, strict=True)},
                                                 strings_can_be_null=False, quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return _rows(text, names, kinds)
    out: dict[str, np.ndarray] = {}
    bad = np.zeros(tab.num_rows, dtype=bool)
    for n, k in zip(names, kinds, strict=True):
        col = tab.column(n)
        if k == "int":
            bad |= col.is_null().to_numpy(zero_copy_only=False)
            out[n] = col.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        elif k == "float":
            out[n] = col.fill_null(float("nan")).to_numpy(zero_copy_only=False).astype(np.float64)
        else:
            out[n] = np.asarray(col.to_pylist(), dtype=object)
    return out, bad


def _rows(text: bytes, names: Sequence[str], kinds: Sequence[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    cols: dict[str, list[object]] = {n: [] for n in names}
    bad: list[bool] = []
    for line in text.decode("utf-8", "replace").splitlines():
        if not line:
            continue
        fields = line.rstrip("\r").split(",")
        ok = len(fields) == len(names)
        values: list[object] = []
        for i, k in enumerate(kinds):
            f = fields[i] if i < len(fields) else ""
            try:
                v: object = int(f) if k == "int" else (float(f) if f else float("nan")) if k == "float" else f
            except ValueError:
                ok = False
                v = 0 if k == "int" else float("nan") if k == "float" else ""
            values.append(v)
        for n, v in zip(names, values, strict=True):
            cols[n].append(v)
        bad.append(not ok)
    out: dict[str, np.ndarray] = {}
    for n, k in zip(names, kinds, strict=True):
        out[n] = np.array(cols[n], dtype=np.int64 if k == "int" else np.float64 if k == "float" else object)
    return out, np.array(bad, dtype=bool)


def split_header(text: bytes, header_start: bytes) -> tuple[bytes, bool]:
    """``text`` without its header line when it starts with ``header_start``; whether it had one."""
    if text.startswith(header_start):
        cut = text.find(b"\n")
        return (text[cut + 1:] if cut >= 0 else b""), True
    return text, False


def epoch_ns(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Venue epoch stamps in ms or us (Binance spot moved to us in 2025; Tardis is us) -> ns, and a mask of values
    out of what a record holds (negative, or past int64 ns): refused as the live decoder refuses them."""
    us = values > 10 ** 14  # a ms stamp passes 1e14 in the year 5138
    bad = (values < 0) | (~us & (values > EPOCH_MS_MAX)) | (us & (values > EPOCH_MS_MAX * 1000))
    ns = np.where(us, values * 1000, values * 1_000_000)
    return np.where(bad, 0, ns).astype(np.int64), bad
