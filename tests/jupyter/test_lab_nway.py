"""The N-way widget in a real JupyterLab: a three-way ``gw.compare`` (eager, a refactor, torch.compile) that ends a
cell shows one pane per side, the reference once, side by side; a real click in one pane selects its counterpart in
every pane, and the kernel's ``w.selected`` / ``w.selected_all`` say so; the kernel's ``w.selected = n`` reaches
every pane. Offline: every non-loopback request is aborted and must not happen."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest
from lab_helpers import REPO, Lab, LabNotebook, as_point, new_offline_page

pytestmark = [pytest.mark.jupyterlab, pytest.mark.browser, pytest.mark.slow]

SHOTS = Path("/tmp/gw-shots")
SIDES = ["eager", "refactor", "compiled"]

SETUP = ("import sys\n"
         f"sys.path.insert(0, {str(REPO / 'tests')!r})\n"
         "import graphwidget as gw\n"
         "from nway_models import three_ways\n"
         "sides, x = three_ways()\n"
         "d = gw.compare(sides, x, advise=False)\n"
         "d")


@pytest.fixture(scope="module")
def opened(lab: Lab, browser: Any) -> Iterator[Dict[str, Any]]:
    url = lab.write_notebook("nway.ipynb", [
        SETUP,
        "w = d.widget(height=520)\nw",
        "print('selected:', w.selected, w.selected_all)",
        "lin = d.graphs['eager'].nodes(op='AddmmBackward0')[0]\nw.selected = lin\nprint('lin:', lin)",
    ])
    page = new_offline_page(browser)
    page.set_viewport_size({"width": 1600, "height": 1000})
    try:
        nb = LabNotebook(page, url)
        nb.run(0, timeout=180_000)
        yield {"nb": nb}
    finally:
        page.context.close()


def panes_of(nb: LabNotebook, root: Any) -> List[str]:
    nb.api(root, "gw.idle()")
    return list(nb.api(root, "gw.panes()"))


def clickable(nb: LabNotebook, root: Any, pane: int) -> Tuple[int, float, float]:
    """A drawn node of pane ``pane`` with a counterpart in the reference whose screen position is that pane's canvas."""
    for node in nb.api(root, f"gw.visibleNodeIds({pane})"):
        if nb.api(root, f"gw.counterparts(arg, {pane})[0]", node) is None:
            continue
        pos = nb.api(root, f"gw.nodeScreenPosition(arg, {pane})", node)
        if pos is None:
            continue
        x, y = as_point(pos)
        hit = root.evaluate("(el, [x, y, k]) => { const t = document.elementFromPoint(x, y);"
                            " return !!t && t.tagName === 'CANVAS'"
                            " && el.querySelectorAll('.gw-nway-pane')[k].contains(t); }", [x, y, pane])
        if hit:
            return int(node), x, y
    raise AssertionError(f"no matched node of pane {pane} is under the pointer anywhere")


def test_a_compare_that_ends_a_cell_shows_one_pane_per_side(opened: Dict[str, Any]) -> None:
    nb = opened["nb"]
    root = nb.widget_root(0, timeout=120_000)
    assert panes_of(nb, root) == SIDES  # the reference once, first
    assert root.locator(".gw-nway-pane").count() == 3
    rects = nb.api(root, "gw.paneRects()")
    assert len({round(r["top"]) for r in rects}) == 1 and rects[0]["left"] < rects[1]["left"] < rects[2]["left"]
    assert nb.api(root, "gw.headerText(0)").split("\n") == ["eager", "reference"]
    assert "compiled region" in nb.api(root, "gw.headerText(2)")
    nb.offline.assert_clean()


def test_a_click_selects_the_counterparts_in_every_pane_and_reaches_the_kernel(opened: Dict[str, Any]) -> None:
    nb = opened["nb"]
    nb.run(1, timeout=120_000)
    root = nb.widget_root(1, timeout=120_000)
    assert panes_of(nb, root) == SIDES
    root.scroll_into_view_if_needed()
    target, x, y = clickable(nb, root, 1)
    nb.page.mouse.click(x, y)
    nb.page.wait_for_function("([el, id]) => el.graphwidget.selected(1) === id", arg=[root.element_handle(), target],
                              timeout=10_000)
    nb.api(root, "gw.idle()")
    every = nb.api(root, "gw.counterparts(arg, 1)", target)
    assert every[1] == target and every[0] is not None
    assert nb.api(root, "gw.selectedAll()") == every  # every pane follows, through the reference
    nb.run(2)
    nb.wait_output(2, f"selected: {every[0]} [{', '.join('None' if v is None else str(v) for v in every)}]")
    SHOTS.mkdir(exist_ok=True)
    nb.page.mouse.move(0, 0)
    nb.cell(1).screenshot(path=str(SHOTS / "nway-widget-jlab.png"))
    nb.offline.assert_clean()


def test_the_kernels_selection_reaches_every_pane(opened: Dict[str, Any]) -> None:
    nb = opened["nb"]
    nb.run(1, timeout=120_000)  # its own widget: this test does not rely on the one before having run
    root = nb.widget_root(1, timeout=120_000)
    nb.run(3)
    lin = int(nb.output_text(3).split("lin:")[1].split()[0])
    nb.page.wait_for_function("([el, id]) => el.graphwidget.selected(0) === id", arg=[root.element_handle(), lin],
                              timeout=10_000)
    nb.api(root, "gw.idle()")
    assert nb.api(root, "gw.selectedAll()") == nb.api(root, "gw.counterparts(arg, 0)", lin)
    assert nb.api(root, "gw.selected(2)") is not None  # the compiled side fused it: its region is selected
    nb.offline.assert_clean()
