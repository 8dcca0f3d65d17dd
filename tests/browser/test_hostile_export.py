"""An exported page whose charts are built from a graph with markup in its op names, source paths and module paths:
in a real Chromium the charts show that text as text (no ``<a>`` element, no bold ``<b>`` rendering, nothing
requested)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pagekit import wait_ready


def test_chart_labels_from_a_hostile_graph_are_text(watched: Any, tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    from test_files import hostile_graph

    from graphwidget.views import charts
    from graphwidget.views.export import export_html

    g = hostile_graph()
    path = export_html(g, tmp_path / "hostile.html", charts=[charts.figure(g, "time"), charts.figure(g, "memory")])
    w = watched(viewport={"width": 1300, "height": 900})
    w.page.goto(path.as_uri())
    wait_ready(w.page)
    w.page.wait_for_selector(".plotly-graph-div .main-svg")
    assert w.page.locator(".plotly-graph-div").count() == 2
    found = w.page.evaluate("""() => {
        const charts = [...document.querySelectorAll('.plotly-graph-div')];
        return {
          links: charts.reduce((n, c) => n + c.querySelectorAll('a').length, 0),
          bold: charts.reduce((n, c) => n + [...c.querySelectorAll('tspan')].filter(
                  t => (t.getAttribute('style') || '').includes('bold')).length, 0),
          text: charts.map(c => c.textContent).join(' '),
        };
    }""")
    assert found["links"] == 0, "a label became a link"
    assert found["bold"] == 0, "a label's <b> was rendered as markup"
    assert '<a href="http://x">' in found["text"] or "<a href=" in found["text"], "the label text is shown as text"
    w.assert_clean()
