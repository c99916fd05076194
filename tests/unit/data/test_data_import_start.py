"""The staging batch a reader writes (built from its numpy columns' own memory, not by ``RecordBatch.from_pydict``,
which imports pandas) holds the rows exactly as ``from_pydict`` would."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from caerus.data.imports.checks import Rows
from caerus.data.imports.worker import STAGE_SCHEMA, stage_batch


def test_the_staging_batch_is_what_from_pydict_makes() -> None:
    rng = np.random.default_rng(5)
    n = 1000
    rows = Rows(sym=rng.integers(0, 3, n).astype(np.uint16), flags=rng.integers(0, 9, n).astype(np.uint8),
                reason=rng.integers(0, 20, n).astype(np.uint8), seq=rng.integers(-5, 1 << 62, n),
                t_exchange=rng.integers(0, 1 << 62, n), t_recv=rng.integers(-1, 1 << 62, n),
                bid_px=rng.normal(size=n), bid_qty=np.where(rng.random(n) < 0.1, np.nan, rng.random(n)),
                ask_px=rng.normal(size=n)[::-1], ask_qty=rng.random(2 * n)[::2],  # views, not contiguous
                derive=rng.integers(0, 3, n).astype(np.uint8))
    got = stage_batch(rows)
    want = pa.RecordBatch.from_pydict(rows.columns(), schema=STAGE_SCHEMA)
    assert got.schema == want.schema == STAGE_SCHEMA and got.num_rows == want.num_rows == n
    for name, col in rows.columns().items():
        a, b = got.column(name).to_numpy(), want.column(name).to_numpy()
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), name
        assert np.array_equal(a, col, equal_nan=a.dtype.kind == "f"), name
