"""Hostile and broken documents in a real Chromium: an exported page whose charts are built from a graph with markup
in its op names, source paths and module paths shows that text as text (no ``<a>`` element, no bold ``<b>``
rendering, nothing requested); every document ``load_json`` accepts is drawn without a page error."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from pagekit import wait_ready

import graphwidget as gw


@pytest.mark.slow
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


# -- every document load_json accepts is drawable -------------------------------------------------------------------
def _height(path: str, paths: List[str]) -> int:
    """How deep the mutated fields below ``path`` go (0: none below it)."""
    below = [p for p in paths if p.startswith(path + ".")]
    return 1 + max(_height(p, paths) for p in below) if below else 0


def combined_mutations(doc: Dict[str, Any]) -> List[Tuple[Dict[str, Any], List[Tuple[str, Any]]]]:
    """The mutations load_json accepts (test_files.accepted_mutations), several per document: the k-th document
    puts the k-th accepted value into every field at once. Fields inside one another (``saved`` and
    ``saved.0.dtype``) go into different documents."""
    from test_files import accepted_mutations, mutation_base, set_path

    accepted = accepted_mutations(doc)
    paths = list(accepted)
    by_height: Dict[int, List[str]] = {}
    for p in paths:
        by_height.setdefault(_height(p, paths), []).append(p)
    out = []
    for group in by_height.values():
        for k in range(max(len(accepted[p]) for p in group)):
            d = mutation_base(doc)
            done = []
            for p in group:
                if k < len(accepted[p]):
                    set_path(d, p, copy.deepcopy(accepted[p][k]))
                    done.append((p, accepted[p][k]))
            out.append((d, done))
    return out


_DRIVE = """async () => {
    const a = document.querySelector('.graphwidget-root').graphwidget;
    const problems = [];
    for (const id of a.visibleNodeIds()) {
      try { await a.select(id); a.inspectorText(); } catch (e) { problems.push(`select ${id}: ${e}`); }
    }
    for (const m of ['grad_bytes', 'saved_bytes', 'bwd_ms', 'fwd_ms', 'output_bytes']) {
      try { a.colourBy(m); a.legendText(); } catch (e) { problems.push(`colour ${m}: ${e}`); }
    }
    try { a.search('x'); a.findingsText(); } catch (e) { problems.push(`search/findings: ${e}`); }
    return problems;
}"""


def render_problems(w: Any, path: Path) -> List[str]:
    """Open an export, use every part of the viewer on it (inspector of every node, hover tooltips of the nodes and
    an edge, every colour, the tables and the findings tab); what went wrong, [] when nothing did."""
    w.errors.clear()
    w.page.goto(path.as_uri())
    root = w.page.wait_for_selector('.graphwidget-root:is([data-gw-state="ready"], [data-gw-state="error"])',
                                    timeout=60_000)
    if root.get_attribute("data-gw-state") == "error":
        return [w.page.locator(".gw-error").text_content()] + w.errors
    problems = w.page.evaluate(_DRIVE)
    api = "document.querySelector('.graphwidget-root').graphwidget"
    for nid in w.page.evaluate(f"() => {api}.visibleNodeIds()"):
        pos = w.page.evaluate(f"() => {{ const a = {api}; a.centre({nid}); return a.nodeScreenPosition({nid}); }}")
        if pos:
            w.page.mouse.move(pos["x"], pos["y"])
    for tab in ("top", "findings"):
        if w.page.locator(f".gw-tab[data-tab={tab}]").count():
            w.page.click(f".gw-tab[data-tab={tab}]")
    w.page.wait_for_timeout(50)
    return problems + w.errors


@pytest.mark.slow
def test_every_document_load_json_accepts_renders(watched: Any, tmp_path: Path) -> None:
    """Every field of a real profiled graph (nodes, saved tensors, outputs, the leaf tensor, edges and their
    ``also``, meta, a finding) set to values of every JSON type: what load_json accepts, the exported viewer draws
    and inspects without a page error (before: a number as a dtype passed and killed the viewer with
    "e.startsWith is not a function")."""
    from test_files import profiled_doc

    from graphwidget.views.export import export_html

    doc = profiled_doc()
    docs = combined_mutations(doc)
    assert len(docs) >= 10
    w = watched(viewport={"width": 1200, "height": 800})
    for k, (d, changes) in enumerate(docs):
        gw.load_json(json.dumps(d))  # the combination is accepted too
        problems = render_problems(w, export_html(d, tmp_path / f"m{k}.html"))
        if problems:  # name the field: each change of this document alone
            culprits = [(p, v) for p, v in changes
                        if render_problems(w, export_html(_one(doc, p, v), tmp_path / "one.html"))]
            pytest.fail(f"load_json accepted, the viewer failed: {problems[:3]}; the fields: {culprits}")
    assert w.requests == [] and w.dialogs == []


def _one(doc: Dict[str, Any], path: str, value: Any) -> Dict[str, Any]:
    from test_files import mutation_base, set_path
    d = mutation_base(doc)
    set_path(d, path, copy.deepcopy(value))
    return d


def test_a_dtype_the_viewer_cannot_draw_never_reaches_it(tmp_path: Path) -> None:
    """The document that killed the viewer ("e.startsWith is not a function": a number as a saved tensor's dtype)
    is refused by the export itself, naming the node and the field."""
    from test_files import profiled_doc

    from graphwidget.views.export import export_html

    d = profiled_doc()
    n = next(n for n in d["nodes"] if n.get("saved"))
    n["saved"][0]["dtype"] = 32
    with pytest.raises(ValueError, match=rf"node {n['id']} .*saved\[0\]\.dtype must be a string"):
        export_html(d, tmp_path / "bad.html")
    assert not (tmp_path / "bad.html").exists()


# -- the diff figure: labels in its title, legend and tooltips ------------------------------------------------------
HOSTILE_LABEL = '<a href="https://example.com">x</a>'


@pytest.mark.slow
def test_diff_chart_labels_are_text(watched: Any, tmp_path: Path) -> None:
    """Diff.figure() put the two labels into the chart's title unescaped: exported, the title held a live link to
    example.com. Now every text plotly draws (title, legend, axis tick labels from op names, hover text) shows the
    label literally, and no chart holds an <a> element."""
    pytest.importorskip("plotly")
    from test_files import HOSTILE_LINK, hostile_graph

    from graphwidget.views.export import export_html

    a = hostile_graph()
    b = gw.load_json(a.to_json())
    d = gw.diff(a, b, labels=(HOSTILE_LABEL, "B & <b>bold</b>"))
    path = export_html(d, tmp_path / "diff.html", charts=[d.figure()])
    w = watched(viewport={"width": 1300, "height": 900})
    w.page.goto(path.as_uri())
    w.page.wait_for_selector(".plotly-graph-div .main-svg")
    found = w.page.evaluate("""() => {
        const c = document.querySelector('.plotly-graph-div');
        return {
          links: c.querySelectorAll('a').length,
          bold: [...c.querySelectorAll('tspan')].filter(t => (t.getAttribute('style') || '').includes('bold')).length,
          title: (c.querySelector('.gtitle') || {}).textContent || '',
          legend: [...c.querySelectorAll('.legendtext')].map(t => t.textContent),
          ticks: [...c.querySelectorAll('.ytick text')].map(t => t.textContent),
        };
    }""")
    assert found["links"] == 0, "a label became a link"
    assert found["bold"] == 0, "a label's <b> was rendered as markup"
    assert found["title"] == f'{HOSTILE_LABEL} vs B & <b>bold</b> per op type', found["title"]
    assert found["legend"] == [HOSTILE_LABEL, "B & <b>bold</b>"], found["legend"]
    assert any(HOSTILE_LINK in t for t in found["ticks"]), found["ticks"]  # op names, literally
    # the hover box of a bar: its op name and the label, as text
    w.page.locator(".plotly-graph-div").first.scroll_into_view_if_needed()  # below the viewer
    bars = [b for b in (p.bounding_box() for p in w.page.locator(".plotly-graph-div .bars .point path").all()) if b]
    box = max(bars, key=lambda b: b["width"])
    w.page.mouse.move(box["x"] + box["width"] / 2 - 3, box["y"] + box["height"] / 2)
    w.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    w.page.wait_for_selector(".hoverlayer .hovertext")
    hover = w.page.evaluate("""() => ({
        text: document.querySelector('.hoverlayer').textContent,
        links: document.querySelectorAll('.hoverlayer a').length })""")
    assert hover["links"] == 0 and HOSTILE_LINK in hover["text"], hover
    w.assert_clean()
