"""``g.memory().widget()`` in a real JupyterLab (docs/memory.md): the graph, coloured by "alive at the peak", with the
memory timeline (a plotly FigureWidget) beside it; a real click on a point of the timeline selects that node in the
kernel and in the graph, and the kernel's selection is marked on the timeline. Offline: every non-loopback request is
aborted and must not happen. Screenshots go to $GW_SHOTS when it is set (memory-widget.png)."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from lab_helpers import Lab, LabNotebook

from graphwidget.views.plotly_inline import SELECTED_LINE

pytestmark = [pytest.mark.jupyterlab, pytest.mark.browser, pytest.mark.slow]

CELLS = [
    "import torch, graphwidget as gw\n"
    "torch.manual_seed(0)\n"
    "model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Tanh()) for _ in range(6)])\n"
    "g = gw.profile(model, torch.randn(2048, 256), repeat=1, warmup=0, memory=True)\n"
    "m = g.memory()\n"
    "box = m.widget(height=480)\n"
    "w = box.children[0]\n"
    "box",
    "print('selected:', w.selected, w.colour_by)",
    "w.selected = m.peak['node']",
]

#: The viewport position of point ``i`` of the timeline's first trace (plotly's own axis mapping), and its node id.
POINT_JS = """(d, i) => { const L = d._fullLayout, t = d.data[0], r = d.getBoundingClientRect();
  let y = 0; for (const s of d.data) if (s.stackgroup) y += s.y[i];
  return [r.left + L.xaxis._offset + L.xaxis.l2p(i), r.top + L.yaxis._offset + L.yaxis.l2p(y / 2), t.customdata[i]]; }"""


def until(check: Any, timeout: float = 30.0) -> None:
    """Poll ``check()`` from Python (the figure's own state, read with one evaluate each time) until it is true."""
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.2)


def test_memory_widget_puts_the_timeline_beside_the_graph_and_links_them(lab: Lab, lab_page: Any) -> None:
    nb = LabNotebook(lab_page, lab.write_notebook("memory.ipynb", CELLS))
    nb.run(0, timeout=180_000)
    root = nb.widget_root(0)
    plot = nb.cell(0).locator(".js-plotly-plot").first
    plot.wait_for(timeout=30_000)
    until(lambda: plot.evaluate("d => !!(d.data && d.data[0] && d.data[0].x && d._fullLayout && d._fullLayout.xaxis)"))
    g_box, p_box = root.bounding_box(), plot.bounding_box()
    # beside: to the right of the graph, overlapping it vertically, both of a usable width
    assert p_box["x"] >= g_box["x"] + g_box["width"] - 2, (g_box, p_box)
    assert p_box["y"] < g_box["y"] + g_box["height"] and g_box["y"] < p_box["y"] + p_box["height"]
    assert g_box["width"] >= 400 and p_box["width"] >= 300, (g_box, p_box)
    assert nb.api(root, "gw.colour()") == "peak_bytes"
    # a real click on a backward point: the kernel's w.selected and the graph's selection follow
    n = plot.evaluate("d => d.data[0].x.length")
    x, y, node = plot.evaluate(POINT_JS, (3 * n) // 4)
    lab_page.mouse.move(x, y)
    lab_page.mouse.click(x, y)
    lab_page.wait_for_function("([el, id]) => el.graphwidget.selected() === id", arg=[root.element_handle(), node],
                               timeout=15_000)
    nb.run(1)
    nb.wait_output(1, f"selected: {node} peak_bytes")
    # the kernel's selection comes back as a line on the timeline at each of the node's points
    nb.run(2)
    peak_x = plot.evaluate("d => d.data.find(t => t.name === 'peak').x[0]")
    until(lambda: plot.evaluate("(d, [x, c]) => (d.layout.shapes || []).some(s => s.line && s.line.color === c "
                                "&& s.x0 === x)", [peak_x, SELECTED_LINE]))
    shots = os.environ.get("GW_SHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        nb.cell(0).screenshot(path=str(Path(shots) / "memory-widget.png"))
    nb.offline.assert_clean()


@pytest.mark.parametrize("width,sidebar", [(800, False), (640, False), (800, True)],
                         ids=["800", "640", "800-with-files"])
def test_memory_widget_in_a_narrow_lab_puts_the_timeline_under_the_graph(lab: Lab, lab_page: Any, width: int,
                                                                         sidebar: bool) -> None:
    """A Lab window 800 px wide (and 640; and 800 with the file browser open, which leaves the output area under
    300 px) leaves too little for the graph beside a 460 px timeline: the timeline goes under the graph, which keeps
    the whole width; both are whole inside the output area (the timeline as wide as the area when that is narrower
    than 460 px), and the graph still draws its nodes."""
    lab_page.set_viewport_size({"width": width, "height": 1000})
    nb = LabNotebook(lab_page, lab.write_notebook(f"memory-{width}-{sidebar}.ipynb", CELLS[:1]))
    tab = lab_page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current")
    if not sidebar and tab.count():
        tab.first.click()  # the file browser folds away, as a user at this width would have it
    nb.run(0, timeout=180_000)
    root = nb.widget_root(0)
    plot = nb.cell(0).locator(".js-plotly-plot").first
    plot.wait_for(timeout=30_000)
    until(lambda: plot.evaluate("d => !!(d._fullLayout && d._fullLayout.xaxis)"))
    area = nb.cell(0).locator(".jp-OutputArea-output").first.bounding_box()
    g_box, p_box = root.bounding_box(), plot.bounding_box()
    assert g_box["width"] >= 0.9 * area["width"], (area, g_box)
    assert p_box["y"] >= g_box["y"] + g_box["height"] - 2, ("the timeline is under the graph", g_box, p_box)
    assert nb.api(root, "gw.labelStats().items") > 0
    # the timeline's box stays inside the output area: whole when the area has room for it, else scrolling sideways
    holder = plot.evaluate_handle("d => d.closest('.widget-box')")
    h_box = holder.bounding_box()
    assert h_box["x"] >= area["x"] - 1 and h_box["x"] + h_box["width"] <= area["x"] + area["width"] + 1, (area, h_box)
    if area["width"] >= p_box["width"]:
        assert p_box["x"] + p_box["width"] <= area["x"] + area["width"] + 1, (area, p_box)
    else:
        assert holder.evaluate("e => e.scrollWidth > e.clientWidth && getComputedStyle(e).overflowX === 'auto'")
    # the figure's title is not cut: plotly drew it inside the figure
    title = plot.locator(".gtitle").first.bounding_box()
    assert title and title["x"] >= p_box["x"] and title["x"] + title["width"] <= p_box["x"] + p_box["width"], title
    shots = os.environ.get("GW_SHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        nb.cell(0).screenshot(path=str(Path(shots) / f"memory-widget-{width}{'-files' if sidebar else ''}.png"))
    nb.offline.assert_clean()
