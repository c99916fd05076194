"""The root conftest groups a module's tests on one xdist worker when they use a module-scoped fixture (so the
parallel pass builds it once), and leaves the other tests free to go to any worker. Checked on this module's own
tests: the marks are what pytest-xdist's loadgroup reads."""

from __future__ import annotations

import pytest

MODULE = "tests/unit/test_suite_groups.py"


@pytest.fixture(scope="module")
def built_once() -> list[int]:
    return [1]


def test_a_test_using_a_module_scoped_fixture_is_grouped_with_its_module(request: pytest.FixtureRequest,
                                                                          built_once: list[int]) -> None:
    marks = [m.args for m in request.node.iter_markers("xdist_group")]
    assert marks == [(MODULE,)] and built_once == [1]


def test_a_test_without_one_is_not_grouped(request: pytest.FixtureRequest) -> None:
    assert list(request.node.iter_markers("xdist_group")) == []
