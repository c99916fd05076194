"""caerus.metrics.rss against a real child process: a process that is not running its program gives no reading."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil
import pytest

from caerus.metrics.rss import RssSampler


def test_sampler_takes_no_reading_of_a_process_not_running_its_program() -> None:
    """A zombie (exited, not yet reaped) reads 0 everywhere, as a process caught mid-exec reads next to nothing
    (16 KiB, no file-backed page, seen as a session's first sample): neither is a reading of its memory."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 30
        while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE:
            if time.monotonic() > deadline:
                pytest.fail("the child did not exit within 30 s")
            time.sleep(0.01)
        rss = RssSampler(interval_s=3600.0, warmup_s=0.0)
        rss.watch({"zombie": child.pid, "self": os.getpid()})
        rss.sample(force=True)
        assert rss.samples["zombie"] == [] and len(rss.samples["self"]) == 1
        assert set(rss.summary()) == {"self"}
    finally:
        child.wait(timeout=10)
