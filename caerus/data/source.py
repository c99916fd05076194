"""What a ``source`` names: a session folder, a capture store, or a ClickHouse server, and the instrument list
that names its symbol ids.

* a session folder (``<dir>/capture/chdb`` exists): its capture store, named by its ``instruments.json``;
* a capture store (``<dir>/chdb`` exists, e.g. ``SESSION/capture``) or its ``chdb`` folder: the list beside it
  (the session folder's ``instruments.json``) or inside it, as ``caerus replay`` finds it;
* ``http://HOST:PORT``: a ClickHouse server (the sink's), with ``user`` and a 0600 ``password_file``; its rows are
  named by ``instruments`` (a session folder or an instruments.json).

With no list, ids are named by caerus.instruments.DEFAULT (id 0 = BTC, what a single-instrument session trades);
``instruments=`` overrides the list for any source.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from caerus.instruments import DEFAULT, FILE_NAME, InstrumentError, InstrumentSet
from caerus.instruments import load as load_instruments

from .engines import ChdbEngine, DataError, Engine, HttpEngine, url_like

SourceLike = str | Path
InstrumentsLike = InstrumentSet | str | Path | None


@dataclass
class Source:
    """An open engine, the instrument list naming its symbol ids, and a label for messages."""

    engine: Engine
    instruments: InstrumentSet
    label: str

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _instruments(given: InstrumentsLike, beside: list[Path]) -> InstrumentSet:
    if isinstance(given, InstrumentSet):
        return given
    if given is not None:
        path = Path(given)
        candidates = [path / FILE_NAME if path.is_dir() else path]
    else:
        candidates = [p for p in beside if p.is_file()]
    for path in candidates[:1]:
        try:
            return load_instruments(path)
        except InstrumentError as exc:
            raise DataError(str(exc)) from None
    return DEFAULT


def open_source(source: SourceLike, instruments: InstrumentsLike = None, user: str | None = None,
                password_file: str | Path | None = None) -> Source:
    """Open ``source`` (see the module doc); DataError naming it when it holds no capture store."""
    text = str(source)
    if url_like(text):
        engine: Engine = HttpEngine(text, user=user, password_file=Path(password_file) if password_file else None)
        return Source(engine, _instruments(instruments, []), engine.where)
    path = Path(source)
    if (path / "capture" / "chdb").is_dir():  # a session folder
        store, beside = path / "capture", [path / FILE_NAME]
    elif (path / "chdb").is_dir():  # a capture store
        store, beside = path, [path.parent / FILE_NAME, path / FILE_NAME]
    elif path.name == "chdb" and path.is_dir():  # the store's chDB folder itself
        store, beside = path.parent, [path.parent.parent / FILE_NAME, path.parent / FILE_NAME]
    elif not path.exists():
        raise DataError(f"{path}: no such session folder, capture store or ClickHouse URL (http://HOST:PORT)")
    else:
        raise DataError(f"{path}: not a session folder or capture store (no capture/chdb or chdb folder in it)")
    insts = _instruments(instruments, beside)
    return Source(ChdbEngine(store), insts, str(path))
