"""What the exporter reads of a session folder: each process's counter-block name, pid and interval log (.hlog).

config.toml (written before the fleet starts) names every process and its ``--stats-segment``; processes.json
(rewritten on every restart) holds the pids; ``<process>.hlog`` are the processes' 1 s interval histograms.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path


class SessionFolderError(ValueError):
    """The folder is not a session folder the exporter can read."""


@dataclass(frozen=True)
class FleetProcess:
    name: str
    stats_segment: str | None
    hlog: Path


def read_fleet(session_dir: Path) -> list[FleetProcess]:
    """The session's processes from its config.toml (raises SessionFolderError naming what is wrong)."""
    cfg = session_dir / "config.toml"
    try:
        doc = tomllib.loads(cfg.read_text())
    except FileNotFoundError:
        raise SessionFolderError(f"{cfg} does not exist (not a session folder, or the fleet has not started)") from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SessionFolderError(f"{cfg} is unreadable: {exc}") from None
    procs = doc.get("processes")
    if not isinstance(procs, dict) or not procs:
        raise SessionFolderError(f"{cfg} has no [processes.*] tables")
    out = []
    for name, spec in procs.items():
        argv = spec.get("argv", []) if isinstance(spec, dict) else []
        seg = argv[argv.index("--stats-segment") + 1] if "--stats-segment" in argv[:-1] else None
        out.append(FleetProcess(name, seg, session_dir / f"{name}.hlog"))
    return out


def read_pids(session_dir: Path) -> dict[str, int]:
    """process -> pid of its current incarnation (empty while processes.json is missing or half-written)."""
    try:
        doc = json.loads((session_dir / "processes.json").read_text())
    except (OSError, ValueError):
        return {}
    return {name: int(p["pid"]) for name, p in doc.items() if isinstance(p, dict) and p.get("pid")}
