"""docs/research.md's reproducible worked example prints what the commands print: every ``$ caerus ...`` line between
the ``worked-example`` markers is run (in process, in an empty folder) and its output must equal the lines under it,
exit status included. The same seeds give the same numbers on the same revision, so a doc that drifts from the code
fails here.

The example is also the verdict's end-to-end proof on both controls: the known-edge market says YES with every
placebo NO, and the no-lead market (Hyperliquid ignores Binance) says NO with training declining.

After a change that moves the numbers on purpose, rewrite the block from the commands' own output:
``CAERUS_WRITE_DOCS=1 python -m pytest tests/unit/research/test_worked_example.py``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest

from caerus import cli

DOC = Path(__file__).parents[3] / "docs" / "research.md"
BEGIN, END = "<!-- worked-example -->", "<!-- /worked-example -->"
#: a model's hash as printed: sha256 of its document, full-precision weights included, whose last bits depend on the
#: CPU's floating-point kernels (the same revision printed another hash on another machine, an AMD EPYC, every printed
#: number equal). Compared with the file the command wrote instead of with the doc.
HASH = re.compile(r"hash ([0-9a-f]{16})")


def _block(text: str) -> tuple[int, int, list[tuple[str, list[str]]]]:
    """(start, end offsets of the console block, [(command, expected output lines)])."""
    a = text.index(BEGIN)
    b = text.index(END, a)
    body = text[a:b].split("```console\n", 1)[1].rsplit("```", 1)[0]
    steps: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
    return a, b, steps


def _run(command: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    argv = shlex.split(command)
    assert argv[0] == "caerus", f"the worked example runs caerus commands only: {command}"
    rc = cli.main(argv[1:])
    out = capsys.readouterr()
    lines = (out.out + out.err).rstrip("\n").splitlines()
    return lines + ([f"[exit {rc}]"] if rc else [])


def _masked(lines: list[str]) -> list[str]:
    return [HASH.sub("hash <16 hex digits>", line) for line in lines]


def _hash_written(argv: list[str], folder: Path) -> str:
    """The first 16 digits of the hash of the model a worked-example command prints: train's ``-o`` file; verdict's
    market model, in its ``--out`` folder (the other variants print none)."""
    if argv[1] == "train":
        doc = json.loads((folder / argv[argv.index("-o") + 1]).read_text())
    else:
        verdict = json.loads((folder / argv[argv.index("--out") + 1] / "verdict.json").read_text())
        doc = verdict["variants"][0]["model"]
    return str(doc["hash"])[:16]


@pytest.mark.timeout(1200)  # four trainings and two verdicts: ~2 min quiet, several on a loaded 2-vCPU machine
def test_the_worked_example_prints_what_the_docs_say(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    text = DOC.read_text()
    a, b, steps = _block(text)
    assert len(steps) >= 4
    monkeypatch.chdir(tmp_path)
    got = [(cmd, _run(cmd, capsys)) for cmd, _ in steps]
    if os.environ.get("CAERUS_WRITE_DOCS") == "1":
        lines = [f"$ {cmd}\n" + "".join(f"{x}\n" for x in out) for cmd, out in got]
        head = text[a:b].split("```console\n", 1)[0]
        DOC.write_text(text[:a] + head + "```console\n" + "".join(lines) + "```\n" + text[b:])
        return
    for (cmd, want), (_, have) in zip(steps, got, strict=True):
        assert _masked(have) == _masked(want), f"`{cmd}` printed something else than docs/research.md says"
        # where the block shows a hash (the masked lines matched), it is the hash of the model the command wrote
        for h in (h for line in have for h in HASH.findall(line)):
            assert h == _hash_written(shlex.split(cmd), tmp_path), f"`{cmd}` printed a hash not of its model"
    # and what the example demonstrates, from the result documents
    edge = json.loads((tmp_path / "v-edge" / "verdict.json").read_text())
    assert {v["variant"]: v["verdict"] for v in edge["variants"]} == {"market": "YES", "decoupled": "NO",
                                                                      "leader_delayed": "NO", "lag_zero": "NO",
                                                                      "target_future": "NO"}
    assert edge["verdict"] == "YES" and "profile fleet-2vcpu" in edge["latency"]["headline"]
    market = edge["variants"][0]
    assert market["arms"]["model"]["orders"] > 30 and market["arms"]["model"]["pnl"]["ci"][0] > 0
    points = {k for k in market["arms"] if k.startswith("latency ")}
    assert points == {f"latency {p}" for p in ("0", "p50", "p99", "2x")}
    none = json.loads((tmp_path / "v-none" / "verdict.json").read_text())
    assert none["verdict"] == "NO"
    for v in none["variants"]:
        assert v["verdict"] == "NO", v["variant"]
        if v["variant"] != "lag_zero":  # the lag-0 market makes the follower copy the leader (at once)
            assert not v["tradeable"] and v["arms"]["model"]["orders"] == 0
    assert json.loads((tmp_path / "no-lead.json").read_text())["tradeable"] is False
