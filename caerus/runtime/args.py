"""The command-line flags every fleet process takes, and how a process reports a bad configuration (exit 2)."""

from __future__ import annotations

import argparse
import sys

from caerus.ipc.wait import POLICIES, WaitPolicy
from caerus.plan import parse_cpu_list

EXIT_CONFIG = 2  # a bad configuration stops the process before it starts anything


def add_process_args(parser: argparse.ArgumentParser, *, wait_default: WaitPolicy = WaitPolicy.HYBRID) -> None:
    """The flags every fleet process takes. ``wait_default`` is the process's documented idle policy."""
    parser.add_argument("--stats-segment", metavar="NAME", help="live counter block segment (S.stats.<process>)")
    parser.add_argument("--metrics-dir", metavar="DIR", help="write <process>.hlog here (default: no metrics)")
    parser.add_argument("--wait-policy", choices=POLICIES, default=wait_default,
                        help=f"what to do when idle (default {wait_default})")
    parser.add_argument("--cpus", metavar="LIST", help="pin to these CPUs (kernel list syntax, e.g. 1 or 0-1)")
    parser.add_argument(
        "--attach-timeout", type=float, default=None, metavar="S",
        help="give up (exit 1) when a segment to read has not appeared after S seconds (default: wait forever)",
    )  # fmt: skip


def fail_config(message: str) -> int:
    """Print a configuration error as one line and return the exit code for it (2)."""
    print(f"error: {message}", file=sys.stderr)
    return EXIT_CONFIG


def parse_cpus(text: str | None) -> tuple[int, ...]:
    """Parse --cpus; ValueError naming the flag on bad input. Empty or None = no pinning."""
    if not text:
        return ()
    try:
        return parse_cpu_list(text)
    except ValueError:
        raise ValueError(f"--cpus {text!r} is not a CPU list like 1 or 0-1,3") from None
