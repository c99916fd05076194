"""The one configuration base of every fleet process: frozen msgspec Structs, strict TOML loading, one error type.

Every config (feed, strategy, execution, capture, session) derives from :class:`ConfigBase`: frozen (a config never
changes after start-up), ``forbid_unknown_fields`` (a misspelt key is an error, not a silently ignored default) and
keyword-only. :func:`load_config` reads TOML, converts it, runs the struct's cross-field ``check()`` and raises
:class:`ConfigError` naming the file and the field (``$.risk.max_order_qty``), so a CLI prints one line and exits 2
before it creates or attaches anything.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Annotated, Any, TypeVar

import msgspec

# Common field types. msgspec checks the bounds at conversion; ``Finite*`` also refuses inf/nan, which a bound
# alone does not (inf > 0 is true).
Positive = Annotated[float, msgspec.Meta(gt=0)]
NonNegative = Annotated[float, msgspec.Meta(ge=0)]


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the source and the offending field."""


class ConfigBase(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Base of every Caerus config struct; subclasses add fields and may override :meth:`check`."""

    def check(self) -> None:
        """Cross-field rules msgspec cannot express; raise ConfigError naming the fields.

        The base refuses inf/nan anywhere -- in this struct, in nested config structs (checked recursively, with
        their own ``check``) and in tuples/lists of numbers -- since a bound alone lets inf through (inf > 0)."""
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(f"{name} must be a finite number, got {value}")
            if isinstance(value, ConfigBase):
                try:
                    value.check()
                except ConfigError as exc:
                    raise ConfigError(f"{name}.{exc}") from None
            elif isinstance(value, (tuple, list)):
                for item in value:
                    if isinstance(item, float) and not math.isfinite(item):
                        raise ConfigError(f"{name} must hold finite numbers, got {list(value)}")


C = TypeVar("C", bound=ConfigBase)


def read_toml(path: str | Path, what: str) -> dict[str, Any]:
    """The TOML table in ``path``; ConfigError naming the file when it cannot be read or parsed."""
    path = Path(path)
    try:
        return tomllib.loads(path.read_text())
    except OSError as exc:
        raise ConfigError(f"{what} config {path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{what} config {path}: not valid TOML: {exc}") from None


def convert(raw: Any, kind: type[C], source: str) -> C:
    """``raw`` (a dict from TOML, JSON or argv) as ``kind``, checked; ConfigError naming ``source`` and the field."""
    try:
        cfg = msgspec.convert(raw, kind)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    try:
        cfg.check()
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    return cfg


def load_config(kind: type[C], path: str | Path | None, what: str) -> C:
    """The ``what`` config from TOML ``path`` (None = all defaults), converted and checked."""
    if path is None:
        return convert({}, kind, f"{what} config (defaults)")
    return convert(read_toml(path, what), kind, f"{what} config {path}")
