"""Pricing a finished session at its own latency: `caerus backtest` of the session's captured books, with the
session's strategy config and the latency the session measured, for the report's opening section.

The report never imports research (the import contract: reports only read), so the backtest runs as the command a
user would type, ``python -m caerus backtest``, in a subprocess with a bounded wait, and the report reads what it
wrote, as it reads every other file of the session folder:

* ``<session>/report-backtest/result.json`` (and ``report.html``): the backtest's document, with its
  ``latency_points`` (order path 0, the session's p50, its p99, every draw doubled);
* ``<session>/report-backtest/run.json``: the command, its exit code, how long it took and the last lines it
  printed (so a failure is named in the report).

The command: ``caerus backtest --session S --start strategy --latency-from S --out S/report-backtest``, plus
``--strategy-config F`` when the session's strategy ran with one (read from the strategy's argv in
``config.toml``). ``--start strategy`` replays from where the live strategy started reading; ``--latency-from S``
is ``LatencyModel.from_session(S)``: the fleet's segments as this session measured them, the venue segments it
cannot measure on loopback (the wire; info age against the emulator) from the fleet's profile, named per segment.
A session folder never changes after its session, so a result that exists is kept; a failed run is retried.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: where the report's backtest writes, inside the session folder (not ``backtest/``, the default of a user's own
#: ``caerus backtest --session S``: a run with other settings must not become this session's answer)
DIR = "report-backtest"
RESULT = "result.json"
RUN = "run.json"
CAPTURE = "capture"
#: the longest the report waits for the backtest (~1M books/s: a 4-hour session's books take seconds)
TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Pricing:
    """What the report has to say about the backtest: ``status`` is ``ok`` (``result`` holds the document),
    ``no_capture``, ``not_run`` or ``failed`` (``why`` says why, in one sentence)."""

    status: str
    why: str
    command: list[str]
    result: dict[str, Any] | None
    folder: Path


def has_capture(session: Path) -> bool:
    """Whether the session kept a capture store (its books), the backtest's input."""
    store = Path(session) / CAPTURE
    return store.is_dir() and any(store.iterdir())


def strategy_config(session: Path) -> tuple[Path | None, str | None]:
    """(the strategy config the session's strategy ran with, or None for the defaults; a problem sentence or None).
    From the strategy's argv in ``config.toml`` (what it ran), else ``summary.json``'s options."""
    session = Path(session)
    path: str | None = None
    try:
        doc = tomllib.loads((session / "config.toml").read_text())
        argv = list(((doc.get("processes") or {}).get("strategy") or {}).get("argv") or [])
        if "--config" in argv[:-1]:
            path = str(argv[argv.index("--config") + 1])
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        try:
            path = (json.loads((session / "summary.json").read_text()).get("options") or {}).get("strategy_config")
        except (OSError, ValueError):
            path = None
    if path is None:
        return None, None
    if not Path(path).is_file():
        return Path(path), (f"the session's strategy config {path} no longer exists, and a backtest with other "
                            "settings would not be this session's decisions")
    return Path(path), None


def command(session: Path, python: str = sys.executable) -> tuple[list[str], str | None]:
    """(the backtest command for ``session``, a problem that stops it or None)."""
    session = Path(session).resolve()
    cfg, problem = strategy_config(session)
    argv = [python, "-m", "caerus", "backtest", "--session", str(session), "--start", "strategy",
            "--latency-from", str(session), "--out", str(session / DIR)]
    if cfg is not None:
        argv += ["--strategy-config", str(cfg)]
    return argv, problem


def load(session: Path) -> Pricing:
    """What the session folder holds (no run): the result when a run succeeded, else why there is none."""
    session = Path(session)
    folder = session / DIR
    argv, problem = command(session)
    if not has_capture(session):
        return Pricing("no_capture", f"the session folder has no capture store ({CAPTURE}/, the session's books; "
                                     "a session run with --no-capture keeps none), so there is nothing to backtest",
                       argv, None, folder)
    try:
        run = json.loads((folder / RUN).read_text())
    except (OSError, ValueError):
        run = None
    if isinstance(run, dict) and run.get("returncode") == 0:
        try:
            result = json.loads((folder / RESULT).read_text())
        except (OSError, ValueError) as exc:
            return Pricing("failed", f"the backtest's {folder / RESULT} cannot be read ({exc})", argv, None, folder)
        return Pricing("ok", "", list(run.get("argv") or argv), result, folder)
    if isinstance(run, dict):
        return Pricing("failed", str(run.get("why") or "the backtest failed"), list(run.get("argv") or argv), None,
                       folder)
    if problem:
        return Pricing("not_run", problem, argv, None, folder)
    return Pricing("not_run", "the backtest has not been run for this session", argv, None, folder)


def ensure(session: Path, timeout_s: float = TIMEOUT_S, python: str = sys.executable,
           env: dict[str, str] | None = None) -> Pricing:
    """Run the backtest unless a successful run's result is already there; return what the report shows. ``env``:
    the command's environment (a session passes its allow-listed one; default: this process's)."""
    session = Path(session)
    have = load(session)
    if have.status in ("ok", "no_capture"):
        return have
    argv, problem = command(session, python)
    if problem:
        return Pricing("not_run", problem, argv, None, session / DIR)
    folder = session / DIR
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False,
                             env=os.environ.copy() if env is None else env)
        rc: int | None = res.returncode
        out, err = res.stdout, res.stderr
        why = "" if rc == 0 else _why(f"`caerus backtest` exited with {rc}", err or out)
    except subprocess.TimeoutExpired as exc:  # subprocess.run has killed it
        rc, out, err = None, _text(exc.stdout), _text(exc.stderr)
        why = f"`caerus backtest` did not finish within {timeout_s:g} s (killed; pricing.TIMEOUT_S)"
    except OSError as exc:
        rc, out, err, why = None, "", "", f"`caerus backtest` could not start ({exc})"
    run = {"argv": argv, "returncode": rc, "elapsed_s": round(time.monotonic() - t0, 3), "why": why,
           "stdout_tail": out.splitlines()[-12:], "stderr_tail": err.splitlines()[-12:], "ran_ns": time.time_ns()}
    tmp = folder / (RUN + ".tmp")
    tmp.write_text(json.dumps(run, indent=1))
    tmp.replace(folder / RUN)
    return load(session)


def _why(head: str, text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return f"{head}: {lines[-1]}" if lines else head


def _text(x: bytes | str | None) -> str:
    if x is None:
        return ""
    return x.decode(errors="replace") if isinstance(x, bytes) else x
