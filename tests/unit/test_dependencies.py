"""Every third-party module the code imports is declared, in the extra of whoever runs that code, and both locks
pin what pyproject.toml asks for (a dependency added without `invoke lock` fails here, not on a host)."""

from __future__ import annotations

import ast
import importlib.metadata
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from caerus.metrics.deps import parse_lock
from infra.locks import DEV_LOCK, FLEET_LOCK

ROOT = Path(__file__).resolve().parents[2]
FIRST_PARTY = {"caerus", "infra", "benchmarks", "tests", "tasks"}
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _requirements(group: str | None) -> list[Requirement]:
    raw = PROJECT["dependencies"] if group is None else PROJECT["optional-dependencies"][group]
    return [Requirement(r) for r in raw]


def _declared(*groups: str | None) -> set[str]:
    names: set[str] = set()
    for group in groups:
        for req in _requirements(group):
            if canonicalize_name(req.name) == "caerus":  # dev = caerus[infra,report] + tools
                names |= _declared(*req.extras)
            else:
                names.add(canonicalize_name(req.name))
    return names


def _third_party_imports(path: Path) -> set[str]:
    """Top-level modules imported at run time (imports under `if TYPE_CHECKING:` are for the type checker)."""
    tree = ast.parse(path.read_text(), str(path))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for child in node.body for n in ast.walk(child)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m not in FIRST_PARTY}


# Code that runs in its own venv, never the checkout's: its extra is installed only there (not in the locks), so
# its modules are owned by the distribution of the same name when the checkout's venv does not have them.
OWN_VENV = {
    Path("benchmarks/backtest_speed_peer.py"): "peers",  # .venv-peers, created by benchmarks/backtest_speed.py
}
# python -m benchmarks.peers runs in .venv-peers too, which holds the runtime plus [peers] (locks/peers.txt)
PEERS_DIR = Path("benchmarks/peers")
# modules of own-venv code whose distribution has another name (the checkout's venv cannot say: not installed)
OWN_VENV_DISTS = {"zmq": "pyzmq"}

# Who runs which code, and so which extras its imports may come from.
AREAS = [
    ("caerus (the fleet, on a host)",
     lambda p: p.parts[0] == "caerus" and p.parts[1] not in ("report", "data", "research"), (None,)),
    ("caerus/report", lambda p: p.parts[:2] == ("caerus", "report"), (None, "report")),
    ("caerus/data", lambda p: p.parts[:2] == ("caerus", "data"), (None, "research")),
    ("caerus/research (a researcher's machine)", lambda p: p.parts[:2] == ("caerus", "research"), (None, "research")),
    ("infra (the operator's machine)", lambda p: p.parts[0] == "infra", (None, "infra")),
    ("tasks.py", lambda p: p == Path("tasks.py"), (None, "infra", "report")),
    ("benchmarks", lambda p: p.parts[0] == "benchmarks" and p not in OWN_VENV and p.parent != PEERS_DIR,
     (None, "dev")),
    (f"{PEERS_DIR} (.venv-peers: the runtime + [peers])", lambda p: p.parent == PEERS_DIR, (None, "peers")),
    *((f"{p} (its own venv: [{extra}] only)", lambda q, p=p: q == p, (extra,)) for p, extra in OWN_VENV.items()),
]


@pytest.mark.parametrize("area,member,groups", AREAS, ids=[a[0] for a in AREAS])
def test_every_imported_module_is_declared_for_whoever_runs_it(area: str, member: Callable[[Path], bool],
                                                               groups: tuple[str | None, ...]) -> None:
    dists = importlib.metadata.packages_distributions()
    allowed = _declared(*groups)
    files = [p.relative_to(ROOT) for p in ROOT.rglob("*.py")
             if not {".venv", "node_modules", ".state"} & set(p.parts)]
    problems = []
    for rel in sorted(f for f in files if member(f)):
        for module in sorted(_third_party_imports(ROOT / rel)):
            owners = {canonicalize_name(d) for d in dists.get(module, [])}
            if not owners and (rel in OWN_VENV or rel.parent == PEERS_DIR):
                owners = {canonicalize_name(OWN_VENV_DISTS.get(module, module))}
            if not owners:
                problems.append(f"{rel}: imports {module}, which no installed distribution provides")
            elif not owners & allowed:
                problems.append(f"{rel}: imports {module} (from {', '.join(sorted(owners))}), "
                                f"not declared in {' + '.join(g or 'the base dependencies' for g in groups)}")
    assert problems == [], f"{area}:\n" + "\n".join(problems)


def _pins(lock: Path) -> dict[str, str]:
    return {p.name: p.version for p in parse_lock(lock.read_text(), lock.name) if p.applies()}


def _with_extras(reqs: list[Requirement]) -> list[Requirement]:
    out = []
    for req in reqs:
        if canonicalize_name(req.name) == "caerus":
            for extra in req.extras:
                out += _with_extras(_requirements(extra))
        else:
            out.append(req)
    return out


@pytest.mark.parametrize("lock,groups", [(FLEET_LOCK, (None,)), (DEV_LOCK, (None, "infra", "report", "dev"))],
                         ids=["fleet", "dev"])
def test_lock_pins_every_declared_dependency_within_its_range(lock: Path, groups: tuple[str | None, ...]) -> None:
    pins = _pins(lock)
    problems = []
    for group in groups:
        for req in _with_extras(_requirements(group)):
            if req.marker is not None and not req.marker.evaluate():
                continue
            name = canonicalize_name(req.name)
            if name not in pins:
                problems.append(f"{req} is not pinned in {lock.name}: run `invoke lock`")
            elif not req.specifier.contains(pins[name], prereleases=True):
                problems.append(f"{req}: {lock.name} pins {pins[name]}: run `invoke lock`")
    assert problems == []


def test_the_fleet_lock_is_the_tested_versions() -> None:
    """What a host installs is a subset of what CI tested, version for version."""
    dev = _pins(DEV_LOCK)
    assert {n: (v, dev.get(n)) for n, v in _pins(FLEET_LOCK).items() if dev.get(n) != v} == {}
    every = parse_lock(FLEET_LOCK.read_text()) + parse_lock(DEV_LOCK.read_text())
    assert all(p.hashes for p in every)
