"""A reader process reads a file without importing the store side (chDB, pandas) or pandas through pyarrow: each
``caerus data import`` starts its readers from a fork server that imports only what reading needs, and a module
that drags pandas in costs every import command ~0.2-1 s before its first frame."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "data" / "real"
REPO = Path(__file__).resolve().parents[3]


def test_a_reader_process_reads_a_file_without_importing_pandas_or_chdb(tmp_path: Path) -> None:
    code = (
        "import json, sys\n"
        "from caerus.data.imports.formats import ReadOptions\n"
        "from caerus.data.imports.worker import read_file\n"
        f"r = read_file({str(FIX / 'usdm_btcusdt_20240808_head.gz')!r}, 'hftbacktest', ReadOptions(), "
        f"{str(tmp_path / 'stage.arrows')!r}, None)\n"
        "loaded = sorted(m for m in ('pandas', 'chdb') if m in sys.modules)\n"
        "print(json.dumps({'frames': r.frames, 'loaded': loaded}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO,
                         check=True)
    got = json.loads(out.stdout)
    assert got == {"frames": 400, "loaded": []}
