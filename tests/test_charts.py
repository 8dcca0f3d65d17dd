"""Timing table and plotly figures of profiled graphs; the offline HTML fragment inlines plotly.js."""
from __future__ import annotations

import re

import plotly.graph_objects as go
import pytest
import torch

import graphwidget as gw
from graphwidget import examples as ex
from graphwidget.views import charts


@pytest.fixture(scope="module")
def g():
    torch.manual_seed(0)
    model = ex.SmallConvNet()
    x, target = torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))
    return gw.profile(ex.convnet_loss, model, x, target, repeat=3)


def test_table_lists_slowest_nodes_first(g):
    t = g.timing_table(top=5)
    assert len(t) == 5 and t.columns[:3] == ("id", "op", "fwd_ms")
    totals = [r["total_ms"] for r in t]
    assert totals == sorted(totals, reverse=True)
    assert all(r["total_ms"] == pytest.approx((r["fwd_ms"] or 0) + (r["bwd_ms"] or 0)) for r in t)
    assert t[0]["total_ms"] == max((d["fwd_ms"] or 0) + (d["bwd_ms"] or 0) for _, d in g.nx.nodes(data=True))
    wall = g.meta["timing"]["forward_ms"] + g.meta["timing"]["backward_ms"]
    assert t[0]["share"] == pytest.approx(t[0]["total_ms"] / wall)
    text = str(t)
    assert text.splitlines()[0].split()[:4] == ["id", "op", "fwd_ms", "bwd_ms"] and len(text.splitlines()) == 6
    assert "homography.py:" in text and "/work" not in text  # file:line, not the whole path
    assert t._repr_html_().startswith("<table>") and t._repr_html_().count("<tr>") == 6
    by_bwd = g.timing_table(top=None, by="bwd_ms")
    assert len(by_bwd) == len(g) and by_bwd[0]["bwd_ms"] == max(d["bwd_ms"] for _, d in g.nx.nodes(data=True))


def test_grouped_tables_add_up_with_the_engine_row(g):
    ops = g.timing_table(top=None, by="bwd_ms", group="op")
    engine = [r for r in ops if r["op"] == charts.ENGINE]
    assert len(engine) == 1 and engine[0]["bwd_ms"] == g.meta["timing"]["unattributed_ms"]
    assert sum(r["bwd_ms"] or 0 for r in ops) == pytest.approx(g.meta["timing"]["backward_ms"], rel=0.05)
    assert sum(r["share"] for r in ops) == pytest.approx(1.0, rel=0.05)
    assert sum(r["nodes"] or 0 for r in ops) == len(g)
    mods = {r["module"]: r for r in g.timing_table(top=None, group="module")}
    assert {"features.0", "features.3", "head"} <= set(mods)
    assert mods["features.0"]["nodes"] >= 3  # conv node + its weight and bias leaves
    assert charts.ENGINE not in {r["module"] for r in g.timing_table(group="module", engine=False)}
    src = g.timing_table(top=None, group="source", by="fwd_ms")
    assert charts.ENGINE not in {r["source"] for r in src}  # engine time is backward time only


def test_table_errors_and_memory_on_untimed_graphs():
    x = torch.randn(64, 64, requires_grad=True)
    plain = gw.capture((x.exp() @ x).sum())
    with pytest.raises(ValueError, match="no timings"):
        plain.timing_table()
    mem = plain.timing_table(by="saved_bytes", group="op")
    assert mem[0]["op"] in ("MmBackward0", "ExpBackward0") and mem[0]["saved_bytes"] > 0
    assert isinstance(plain.figure("memory"), go.Figure)
    with pytest.raises(ValueError, match="no timings"):
        plain.figure("time")
    with pytest.raises(ValueError, match="by must be"):
        plain.timing_table(by="speed")
    with pytest.raises(ValueError, match="kind must be"):
        plain.figure("pie")


@pytest.mark.parametrize("kind", ["time", "op", "module", "source", "pareto", "top", "memory"])
def test_every_figure_kind(g, kind):
    fig = g.figure(kind)
    assert isinstance(fig, go.Figure) and len(fig.data) >= 1
    fig.to_json()


def test_figures_show_the_measured_numbers(g):
    fig = g.figure("op")
    bwd = next(t for t in fig.data if t.name == "backward")
    fwd = next(t for t in fig.data if t.name == "forward")
    assert charts.ENGINE in bwd.y
    assert sum(bwd.x) == pytest.approx(g.meta["timing"]["backward_ms"], rel=0.05)
    assert sum(fwd.x) == pytest.approx(g.meta["timing"]["forward_ops_ms"], rel=1e-6)
    top = g.figure("top", top=3)
    assert len(top.data[0].y) == 3 and top.data[0].y[-1].startswith("#")  # slowest drawn at the top
    par = g.figure("pareto")
    cum = par.data[1].y
    assert list(cum) == sorted(cum) and cum[-1] <= 100.0 + 1e-9
    mem = g.figure("memory")
    saved = sum(d["saved_bytes"] for _, d in g.nx.nodes(data=True)) / 2**20
    assert sum(mem.data[0].x) == pytest.approx(saved)


def test_json_roundtrip_keeps_the_views(g):
    g2 = gw.load_json(g.to_json())
    assert [r["id"] for r in g2.timing_table(top=5)] == [r["id"] for r in g.timing_table(top=5)]
    assert isinstance(g2.figure("time"), go.Figure)


def test_html_fragment_inlines_plotlyjs_never_a_cdn(g):
    frag = charts.html_fragment(g)
    from graphwidget.views.plotly_inline import plotlyjs
    js = plotlyjs()
    assert js in frag and len(js) > 3_000_000
    assert frag.count(js) == 1  # once, however many figures
    assert not re.search(r"<script[^>]+src=", frag)
    assert "cdn.plot.ly" not in frag.replace(js, "")
    assert frag.count('class="plotly-graph-div"') == 2  # the "time" dashboard and "memory"
    small = charts.html_fragment([g.figure("op"), g.figure("memory")], include_plotlyjs=False)
    assert js not in small and len(small) < 200_000 and small.count('class="plotly-graph-div"') == 2
    untimed = charts.html_fragment(gw.capture(g.output.detach().requires_grad_() * 2), include_plotlyjs=False)
    assert untimed.count('class="plotly-graph-div"') == 1  # memory only


def test_a_titles_lines_are_escaped_and_its_breaks_survive_a_second_escape():
    """The memory timeline's title is two lines (a 460 px figure cuts one long one): set_title_lines escapes each
    line, joins them with plotly's <br>, and a later escape_labels (the export calls it again) keeps the break."""
    from graphwidget.views.plotly_inline import escape_labels, set_title_lines
    fig = escape_labels(go.Figure(go.Scatter(x=[0], y=[1], name="<b>x</b>")))
    set_title_lines(fig, "Memory: peak 1.0 MiB (saved)", "backward #3 <img src=x onerror=alert(1)>Backward0")
    want = "Memory: peak 1.0 MiB (saved)<br>backward #3 &lt;img src=x onerror=alert(1)&gt;Backward0"
    assert fig.layout.title.text == want
    escape_labels(fig)
    assert fig.layout.title.text == want and fig.data[0].name == "&lt;b&gt;x&lt;/b&gt;"
    # a title changed after it is new text again: escaped whole
    fig.update_layout(title="<br>later")
    escape_labels(fig)
    assert fig.layout.title.text == "&lt;br&gt;later"


def test_the_memory_timelines_title_names_the_peak_on_two_lines():
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))
    g = gw.profile(model, torch.randn(256, 64), repeat=1, warmup=0, memory=True)
    p = g.memory().peak
    title = g.memory().figure().layout.title.text
    first, second = title.split("<br>")
    assert first.startswith(f"Memory: peak {p['bytes'] / 2 ** 20:.1f} MiB")
    assert second == f"{p['phase']} #{p['node']} {p['op']}"
