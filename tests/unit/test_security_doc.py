"""docs/security.md names a test for every defence it claims, and every test it names exists (so a renamed or
deleted test cannot leave the page claiming a defence nothing shows any more)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "security.md"
_REF = re.compile(r"`([ui])/([\w/]+\.py)((?:::\w+)?)`|`::(\w+)`")


def _rows() -> list[str]:
    return [ln for ln in DOC.read_text().splitlines() if ln.startswith("| ") and not ln.startswith("| defence")
            and not ln.startswith("|---") and not ln.startswith("| adversary") and not ln.startswith("| **")]


def test_every_defence_row_names_a_test() -> None:
    rows = _rows()
    assert len(rows) >= 30, "the defence tables are missing"
    for row in rows:
        assert _REF.search(re.split(r"(?<!\\)\|", row)[2]), f"no test named for: {row[:120]}"


def test_every_named_test_exists() -> None:
    missing = []
    for row in _rows():
        current: Path | None = None
        for m in _REF.finditer(row):
            if m.group(2):
                current = ROOT / "tests" / ("unit" if m.group(1) == "u" else "integration") / m.group(2)
                if not current.is_file():
                    missing.append(str(current.relative_to(ROOT)))
                    continue
                name = m.group(3).removeprefix("::")
            else:
                name = m.group(4)
            if name and (current is None or f"def {name}(" not in current.read_text()):
                missing.append(f"{current}::{name}")
    assert not missing, f"docs/security.md names tests that do not exist: {missing}"
