"""The checked-in generated sources (caerus/records/*, caerus/ipc/swmr_publish.py) are what caerus.codegen writes."""

from __future__ import annotations

import importlib
import inspect

import pytest

from caerus import codegen, wire
from caerus.ipc import swmr, swmr_publish


def test_generated_files_are_current() -> None:
    stale = [str(p.relative_to(codegen.ROOT.parent)) for p in codegen.stale()]
    assert stale == [], f"stale generated files {stale}: run `python -m caerus.codegen`"


def test_stale_file_is_named_by_check(tmp_path, monkeypatch, capsys) -> None:
    target = tmp_path / "book.py"
    target.write_text(codegen.render_record_module(wire.BOOK).replace("BOOK_T_RECV: Final = 8", "BOOK_T_RECV = 9"))
    monkeypatch.setattr(codegen, "generated", lambda: {target: codegen.render_record_module(wire.BOOK)})
    assert codegen.main(["--check"]) == 1
    assert "book.py" in capsys.readouterr().err
    assert codegen.main([]) == 0 and codegen.main(["--check"]) == 0  # written, then current


@pytest.mark.parametrize("layout", codegen.RING_LAYOUTS, ids=lambda lay: lay.name)
def test_record_module_names_every_field_at_its_position(layout: wire.Layout) -> None:
    module = importlib.import_module(f"caerus.records.{layout.name}")
    for name in layout.names:
        if not name.startswith("_"):
            assert getattr(module, codegen.field_constant(layout, name)) == layout.index(name)
    assert getattr(module, f"{layout.name.upper()}_FIELD_COUNT") == len(layout.struct.unpack(bytes(layout.size)))


@pytest.mark.parametrize("layout", codegen.RING_LAYOUTS, ids=lambda lay: lay.name)
def test_ring_writers_run_the_checked_in_publish(layout: wire.Layout) -> None:
    fn = swmr._publisher(len(layout.fields))
    assert fn is swmr_publish.PUBLISHERS[len(layout.fields)]
    assert inspect.getsource(fn).replace(fn.__name__, "publish", 1).strip() == swmr.publish_source(
        len(layout.fields)).strip()


def test_another_field_count_is_compiled_from_the_template() -> None:
    n = 3
    assert n not in swmr_publish.PUBLISHERS
    fn = swmr._publisher(n)
    assert fn.__name__ == "publish" and list(inspect.signature(fn).parameters) == ["self", "f0", "f1", "f2"]
