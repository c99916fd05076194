"""Report pages escape what they did not write themselves: session folders named like markup or like a
``javascript:`` URL (names `invoke collect` accepts from a host) stay text and relative links. Synthetic session
folders (their env.json asks chronyc, hence integration)."""

from __future__ import annotations

import json
from pathlib import Path

from caerus.report.render import render_sessions, write_index
from caerus.session.synthetic import make_session
from tests.fixtures.html_check import HOSTILE_NAME, live_markup

REPORT_TAGS = frozenset({"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "div", "ul", "li",
                         "table", "thead", "tbody", "tr", "th", "td", "figure", "img", "figcaption", "a", "code"})


def test_hostile_session_names_stay_text_in_every_page(tmp_path: Path) -> None:
    """Issue 44 (the sweep report's defect, looked for in every page): session folders named like markup and like a
    javascript: URL render as text and as relative links in the session reports, the comparison and the index; a
    meta.json field is escaped too."""
    names = (HOSTILE_NAME, "javascript:alert(1)")
    sessions = [make_session(tmp_path / "sessions", name=n, intervals=3, samples_per_interval=50, seed=k + 3,
                             start_s=1_767_225_600 + k) for k, n in enumerate(names)]
    out = tmp_path / "reports"
    result = render_sessions(sessions, out)
    pages = {p: Path(p).read_text() for p in [*result["sessions"], result["comparison"], result["index"]]}
    for path, page in pages.items():
        assert live_markup(page, REPORT_TAGS) == [], path
        assert "<img src=x" not in page, path
    assert "&lt;img src=x onerror=alert(1)&gt;" in pages[result["index"]]
    assert 'href="javascript%3Aalert%281%29/report.html"' in pages[result["index"]]
    meta = out / "javascript:alert(1)" / "meta.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "caveats": "<script>alert(2)</script>"}))
    index = write_index(out).read_text()
    assert live_markup(index, REPORT_TAGS) == [] and "&lt;script&gt;" in index
