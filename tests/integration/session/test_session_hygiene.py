"""What a real local session leaves to others: no secret of the runner in any child's environment, and no
throwaway wallet key on disk once its runner is gone, however it went.

Two real `caerus session --transport emulator` runners (venue emulator, both feeds, strategy, execution signing
real orders, capture) with secrets exported in their environment and a private TMPDIR:

1. the first one's children are read from ``/proc/<pid>/environ``: no secret reached the emulator, the feeds,
   capture, the strategy or the execution engine (the runner itself has them, so the check can fail);
2. the first runner is SIGKILLed: its wallet folder stays (nothing can clean up after SIGKILL);
3. the second runner's start sweeps it (its runner's pid is gone) and keeps a wallet whose runner is alive;
4. the second runner gets SIGHUP mid-session: it stops its fleet, collects, and removes its own wallet.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import psutil
import pytest

from caerus.runtime.children import stop_child
from caerus.session.order_desk import PREFIX, EmulatorOrderDesk

pytestmark = [pytest.mark.integration,
              pytest.mark.serial("two whole-fleet session runners: the plan pins the hot processes to CPUs")]

ROOT = Path(__file__).resolve().parents[3]
FLEET = ("venue-sim", "capture", "execution", "strategy", "feed-binance", "feed-hyperliquid")
SECRETS = {"AWS_SECRET_ACCESS_KEY": "aws-secret-for-the-test", "AWS_ACCESS_KEY_ID": "AKIATESTTESTTEST",
           "CAERUS_BINANCE_SECRET": "binance-secret-for-the-test", "CAERUS_HYGIENE_SECRET": "caerus-secret",
           "CAERUS_HL_PRIVATE_KEY": "0x" + "11" * 32}
START_S = 150.0  # venue emulator + instruments + whole fleet on a busy 2-core machine
STOP_S = 120.0


def _default_sighup() -> None:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


class Runner:
    """One `caerus session` runner this test started, its output in a file."""

    def __init__(self, out: Path, env: dict[str, str], log: Path) -> None:
        self.out = out
        self._log: IO[bytes] = open(log, "wb")  # noqa: SIM115 - closed in stop()
        self.log_path = log
        cmd = [sys.executable, "-m", "caerus", "session", "--transport", "emulator", "--duration", "300",
               "--out", str(out), "--no-report", "--progress", "lines", "--stop-grace", "15"]
        # SIGHUP at its default disposition: a runner started to ignore it (nohup, which children inherit) rightly
        # keeps ignoring it, and a suite run under nohup once made step 4 wait out its timeout
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env, cwd=str(ROOT),
                                     preexec_fn=_default_sighup)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def fleet(self) -> dict[str, int]:
        """Pid per process once the whole fleet is running (bounded wait); fails naming what was seen."""
        deadline = time.monotonic() + START_S
        doc: dict = {}
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"session exited early ({self.proc.returncode}):\n{self.output()[-3000:]}"
            for f in self.out.glob("*/processes.json"):
                try:
                    doc = json.loads(f.read_text())
                except ValueError:
                    continue
            if set(FLEET) <= set(doc) and all(doc[p]["status"] == "running" for p in FLEET):
                return {p: int(doc[p]["pid"]) for p in FLEET}
            time.sleep(0.2)
        pytest.fail(f"the fleet was not running within {START_S:g} s (saw {doc}):\n{self.output()[-3000:]}")

    def all_pids(self) -> list[int]:
        pids = []
        for f in self.out.glob("*/processes.json"):
            try:
                pids += [int(v["pid"]) for v in json.loads(f.read_text()).values()]
            except (ValueError, KeyError):
                pass
        return pids

    def stop(self) -> None:
        """Whatever is left of this runner and the processes it recorded: SIGTERM, then SIGKILL, by pid."""
        stop_child(self.proc, STOP_S, kill_timeout_s=10)
        _end(self.all_pids())
        self._log.close()


def _end(pids: list[int]) -> None:
    """Stop processes a runner of ours started (their pids from its processes.json), bounded."""
    alive = [p for p in pids if psutil.pid_exists(p)]
    for p in alive:
        try:
            os.kill(p, signal.SIGTERM)
        except ProcessLookupError:
            pass
    _gone, left = psutil.wait_procs([psutil.Process(p) for p in alive if psutil.pid_exists(p)], timeout=20)
    for proc in left:
        proc.kill()
    psutil.wait_procs(left, timeout=10)


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)


def _wallets(tmp: Path) -> list[Path]:
    return sorted(p for p in tmp.iterdir() if p.name.startswith(PREFIX))


def _wallet_of(tmp: Path, pid: int, runner: Runner) -> Path:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        mine = [p for p in _wallets(tmp) if p.name.startswith(f"{PREFIX}{pid}-")]
        if mine:
            return mine[0]
        assert runner.proc.poll() is None, f"session exited early:\n{runner.output()[-3000:]}"
        time.sleep(0.1)
    pytest.fail(f"runner {pid} made no wallet folder in {tmp} within {START_S:g} s")


def test_no_secret_reaches_a_child_and_no_wallet_outlives_its_runner(tmp_path: Path) -> None:
    shm = Path("/dev/shm") / f"caerus-test-hygiene-{os.getpid()}"
    shm.mkdir(mode=0o700)
    tmp = tmp_path / "tmp"
    tmp.mkdir(mode=0o700)
    env = {**os.environ, **SECRETS, "PYTHONPATH": str(ROOT), "CAERUS_SHM_DIR": str(shm), "TMPDIR": str(tmp)}
    first = second = None
    alive_desk = None
    try:
        # 1. secrets stay with the runner
        first = Runner(tmp_path / "a", env, tmp_path / "a.log")
        pids = first.fleet()
        wallet_a = _wallet_of(tmp, first.proc.pid, first)
        runner_env = _environ(first.proc.pid)
        assert set(SECRETS) <= set(runner_env)  # the parent has them: the checks below can fail
        for name, pid in pids.items():
            child = _environ(pid)
            leaked = sorted(set(SECRETS) & set(child))
            assert leaked == [], f"{name} (pid {pid}) got {leaked}"
            assert not [k for k, v in child.items() if v in SECRETS.values()], name
            assert child["CAERUS_SHM_DIR"] == str(shm) and child["TMPDIR"] == str(tmp), name
        assert "CAERUS_SIM_HL_ADDRESS" in _environ(pids["venue-sim"])  # the session's own setting still arrives

        # 2. SIGKILL: the runner cannot clean up
        first.proc.kill()
        first.proc.wait(30)
        _end(list(pids.values()) + first.all_pids())
        assert wallet_a.is_dir() and (wallet_a / "credentials.toml").is_file()

        # 3. the next start sweeps the dead runner's wallet and keeps a live runner's
        alive_desk = EmulatorOrderDesk(base=tmp)  # this test process: alive for the whole test
        second = Runner(tmp_path / "b", env, tmp_path / "b.log")
        wallet_b = _wallet_of(tmp, second.proc.pid, second)  # made after the sweep
        assert not wallet_a.exists(), "the dead runner's wallet was not swept at the next start"
        assert alive_desk.credentials.is_file(), "a live runner's wallet was swept"
        assert f"removed the stale order-desk wallet {wallet_a}" in second.output()

        # 4. SIGHUP mid-session: the runner stops its fleet, collects and removes its wallet
        pids_b = second.fleet()
        second.proc.send_signal(signal.SIGHUP)
        rc = second.proc.wait(STOP_S)
        assert rc == 0, second.output()[-3000:]
        assert not wallet_b.exists(), "SIGHUP left the wallet behind"
        assert [p for p in pids_b.values() if psutil.pid_exists(p)] == [], "SIGHUP left fleet processes running"
        summary = json.loads(next((tmp_path / "b").glob("*/summary.json")).read_text())
        assert summary["interrupted"] is True
        assert _wallets(tmp) == [alive_desk.dir]
    finally:
        for r in (first, second):
            if r is not None:
                r.stop()
        if alive_desk is not None:
            alive_desk.close()
        shutil.rmtree(shm, ignore_errors=True)
