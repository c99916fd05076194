"""The plan / apply engine every configure and deploy step uses.

A step is pure data computed from host facts: files that must have given contents (each may notify handlers,
e.g. "restart chrony" when chrony.conf changed), commands needed because the facts show drift, and notes.
:func:`apply` makes files match (only writing when the content differs, so a second run changes nothing) and
runs commands and triggered handlers only in live mode; otherwise it reports them as planned. That split is
what lets configure run against a test host without systemd, a bootloader or a real NIC.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from infra.remote import RemoteHost

# Command kinds; "reboot" is never run by apply() (configure reboots once, after every step).
KINDS = ("service", "runtime", "bootloader", "package", "nic", "reboot")


@dataclass(frozen=True)
class Command:
    command: str
    why: str
    kind: str = "runtime"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"command kind {self.kind!r} is not one of {KINDS}")


@dataclass(frozen=True)
class FileSpec:
    path: str  # absolute path on the host (the host's prefix is added when written)
    content: str
    mode: int = 0o644
    notify: tuple[str, ...] = ()  # handler names run when this file changed


@dataclass
class Step:
    name: str
    files: list[FileSpec] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)  # needed because the facts show drift
    handlers: dict[str, Command] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "files": [{"path": f.path, "mode": f"{f.mode:o}", "notify": list(f.notify)} for f in self.files],
            "commands": [asdict(c) for c in self.commands],
            "handlers": {k: asdict(v) for k, v in self.handlers.items()},
            "notes": list(self.notes),
        }


@dataclass
class ApplyResult:
    changed: list[str] = field(default_factory=list)  # files written
    executed: list[str] = field(default_factory=list)  # commands run
    planned: list[dict[str, str]] = field(default_factory=list)  # commands not run (plan-only mode / reboot)
    notes: list[str] = field(default_factory=list)

    @property
    def reboot_needed(self) -> bool:
        return any(p["kind"] == "reboot" for p in self.planned)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "reboot_needed": self.reboot_needed}


def apply(host: RemoteHost, steps: list[Step], live: bool, say: Callable[[str], None] = print) -> ApplyResult:
    result = ApplyResult()

    def run_or_plan(step: Step, cmd: Command, done: set[str]) -> None:
        if cmd.command in done:  # a handler that repeats a drift command of the same step runs once
            return
        done.add(cmd.command)
        if live and cmd.kind != "reboot":
            say(f"  [{step.name}] run: {cmd.command}")
            host.run(cmd.command, sudo=True)
            result.executed.append(cmd.command)
        else:
            result.planned.append({"step": step.name, "command": cmd.command, "why": cmd.why, "kind": cmd.kind})

    for step in steps:
        triggered: list[str] = []
        done: set[str] = set()
        for cmd in step.commands:  # packages first: installing one may create the folders the files go to
            if cmd.kind == "package":
                run_or_plan(step, cmd, done)
        for spec in step.files:
            if host.read_text(spec.path) != spec.content:
                host.write_text(spec.path, spec.content, spec.mode)
                say(f"  [{step.name}] wrote {host.path(spec.path)}")
            elif host.mode(spec.path) != spec.mode:
                host.chmod(spec.path, spec.mode)  # same text, wrong permissions (e.g. a script lost +x)
                say(f"  [{step.name}] chmod {spec.mode:o} {host.path(spec.path)}")
            else:
                continue
            result.changed.append(spec.path)
            triggered += [h for h in spec.notify if h not in triggered]
        for cmd in step.commands:
            if cmd.kind != "package":
                run_or_plan(step, cmd, done)
        for name in triggered:
            if name not in step.handlers:
                raise KeyError(f"step {step.name}: file notifies unknown handler {name!r}")
            run_or_plan(step, step.handlers[name], done)
        result.notes += [f"{step.name}: {n}" for n in step.notes]
    return result
