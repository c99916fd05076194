"""Hostile values through a real shell: `invoke test -k` run by invoke's own runner (with pytest swapped for a
printer) and the chronyc command run on the real sshd; each value arrives as plain words and nothing in it runs."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from invoke import Context

import tasks
from infra import kernel
from infra.facts import gather
from infra.remote import open_host
from infra.verify import verify
from tests.fixtures.infra_sshd import InfraHost


def test_invoke_test_k_runs_nothing_through_a_real_shell(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    hostile = f"x' or $(touch {marker}) or 'y\" or `touch {marker}` or \"z"
    printer = tmp_path / "argv.py"  # stands in for pytest: prints the argv the shell gave it
    printer.write_text("import sys, json; print(json.dumps(sys.argv[1:]))\n")
    pytest_prefix, printer_prefix = (shlex.join([sys.executable, "-m", "pytest"]),
                                     shlex.join([sys.executable, str(printer)]))
    results: list[Any] = []

    class Printing(Context):
        def run(self, command: str, **kwargs: Any) -> Any:  # invoke's real runner and shell, pytest swapped out
            assert command.startswith(pytest_prefix)
            kwargs["warn"] = True
            results.append(super().run(command.replace(pytest_prefix, printer_prefix, 1), hide=True, in_stream=False,
                                       **kwargs))
            return results[-1]

    tasks.test(Printing(), k=hostile, no_deps=True, workers=2)
    assert [(r.exited, json.loads(r.stdout)) for r in results] == [
        (0, ["tests", "-m", "not serial", "-n", "2", "--dist", "loadgroup", "-k", hostile]),
        (0, ["tests", "-m", "serial", "-p", "no:xdist", "-k", hostile])]
    assert not marker.exists()


def test_a_hostile_chronyc_runs_nothing_on_the_host(infra_test_host: InfraHost, tmp_path: Path) -> None:
    h = infra_test_host
    marker = tmp_path / "PWNED"
    host = open_host(h.record, h.store.known_hosts, lambda s: None)
    try:
        facts = gather(host)
        for chronyc in (f"echo ok; touch {marker}", f"echo $(touch {marker})", f"echo ok | touch {marker}",
                        f"echo `touch {marker}`"):
            checks, _ = verify(host, facts, kernel.target_plan(facts), [], chronyc, reboot_pending=False)
            [check] = [c for c in checks if c.name == "chrony synchronised"]
            assert check.status == "fail" and not marker.exists(), chronyc
            out = host.run(f"{shlex.join(shlex.split(chronyc))} -c tracking").stdout.strip()
            assert out == " ".join(shlex.split(chronyc)[1:] + ["-c", "tracking"])  # echo printed its words
    finally:
        host.close()
