"""The embedded store bounds chDB's memory over a long session (docs/capture.md, "Memory over a long session").

With chDB's default MergeTree settings, capture's outdated parts waited up to ~5 minutes for a cleanup, which then
removed its hundreds of parts on a pool of up to 128 new threads that stayed: capture's anonymous memory stepped up
by 20-30 MB. The store's table settings make the cleanup come every 5-10 s and remove parts in its own thread. Here
a fresh engine in a child process (tests/fixtures/chdb_cleanup.py) gets 300 outdated parts at once, the worst case
a burst of inserts can leave, and must clear them soon without starting a pool of threads.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from caerus.capture.store import TABLE_SETTINGS

REPO = Path(__file__).resolve().parents[3]
PARTS = 300
WAIT_S = 60.0  # the child gives up on the cleanup after this long; chDB's defaults take 30-40 s here, ours <= ~11 s


def test_outdated_parts_are_removed_soon_and_without_a_thread_pool(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "tests.fixtures.chdb_cleanup", "--store", str(tmp_path / "store"),
                           "--parts", str(PARTS), "--wait", str(WAIT_S)],
                          cwd=REPO, capture_output=True, text=True, timeout=WAIT_S + 60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    assert r["outdated_before"] >= PARTS, f"the merge did not leave {PARTS} outdated parts: {r}"
    assert r["outdated_after"] == 0, f"chDB's cleanup left outdated parts after {WAIT_S:g} s: {r}"
    # within two of our cleanup periods (the default period stretches to 30-300 s): parts never pile up for minutes
    bound = 2 * (TABLE_SETTINGS["max_cleanup_delay_period"] + TABLE_SETTINGS["cleanup_delay_period_random_add"])
    assert r["cleanup_s"] <= bound, f"the cleanup took {r['cleanup_s']} s, more than {bound} s: {r}"
    # chDB's parts-cleaning pool starts up to 128 threads for >= 100 outdated parts, and they stay
    grown = r["threads_after"] - r["threads_before"]
    assert grown < 16, f"removing {r['outdated_before']} outdated parts started {grown} threads: {r}"
