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


def test_the_import_command_runs_without_importing_pandas(tmp_path: Path) -> None:
    # pandas costs an import 0.25-0.3 s of start-up for nothing: the command's parser (every `caerus data` kind),
    # the store's writer and the readers all work on numpy and Arrow
    code = (
        "import json, sys\n"
        "from caerus.cli import main\n"
        f"rc = main(['data', 'import', {str(tmp_path / 'store')!r}, {str(FIX / 'usdm_btcusdt_20240808_head.gz')!r}, "
        f"'--jobs', '1', '--json', {str(tmp_path / 'import.json')!r}])\n"
        "print(json.dumps({'rc': rc, 'pandas': 'pandas' in sys.modules}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO,
                         check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"rc": 0, "pandas": False}
    [entry] = json.loads((tmp_path / "import.json").read_text())["files"]
    assert entry["frames"] == 400 and entry["stored"]["valid"] == 301  # it did import: the check is not vacuous
