"""The diff widget in a real JupyterLab: a real click on one side reaches the kernel as ``selected_a`` and the
counterpart as ``selected_b``; the kernel's ``w.selected_b = K`` reaches the browser; ``%gradcompare`` renders.
Offline: every non-loopback request is aborted and must not happen."""
from __future__ import annotations

from typing import Any, Dict, Iterator

import pytest
from lab_helpers import Lab, LabNotebook, new_offline_page

import graphwidget as gw

pytestmark = [pytest.mark.jupyterlab, pytest.mark.browser, pytest.mark.slow]

SETUP = ("import graphwidget as gw\n"
         "inp = gw.examples.homography_inputs(batch=2, height=16, width=16)\n"
         "d = gw.compare(gw.examples.homography_repeat, gw.examples.homography_broadcast, **inp,\n"
         "               labels=('repeat', 'broadcast'))\n"
         "w = gw.DiffWidget(d, height=500)\n"
         "w")


def the_diff() -> gw.Diff:
    """The diff the notebook builds (same program, same ids, same matching)."""
    inp = gw.examples.homography_inputs(batch=2, height=16, width=16)
    return gw.compare(gw.examples.homography_repeat, gw.examples.homography_broadcast, **inp,
                      labels=("repeat", "broadcast"))


@pytest.fixture(scope="module")
def opened(lab: Lab, browser: Any) -> Iterator[Dict[str, Any]]:
    d = the_diff()
    url = lab.write_notebook("diff.ipynb", [
        SETUP,
        "print('selected:', w.selected_a, w.selected_b)",
        "w.selected_b = {}".format(d.added[0]),
        "%load_ext graphwidget\n%gradcompare gw.examples.homography_repeat gw.examples.homography_broadcast **inp",
    ])
    page = new_offline_page(browser)
    try:
        nb = LabNotebook(page, url)
        nb.run(0)
        yield {"nb": nb, "root": nb.widget_root(0), "diff": d}
    finally:
        page.context.close()


def test_click_on_a_reaches_the_kernel_with_its_counterpart(opened: Dict[str, Any]) -> None:
    nb, root, d = opened["nb"], opened["root"], opened["diff"]
    assert nb.api(root, "gw.panes()") == ["repeat", "broadcast"]
    root.scroll_into_view_if_needed()
    matched = {a for a, _ in d.matched}
    target = x = y = None
    for node in nb.api(root, "gw.visibleNodeIds('a')"):
        if node not in matched:
            continue
        pos = nb.api(root, "gw.nodeScreenPosition(arg, 'a')", node)
        if not pos:
            continue
        x, y = float(pos["x"]), float(pos["y"])
        # pane A's own canvas: a node of A may lie past A's edge, under pane B (the view opens readable, not fitted)
        hit = root.evaluate("(el, [x, y]) => { const t = document.elementFromPoint(x, y);"
                            " return !!t && t === el.querySelectorAll('.gw-canvas')[0]; }", [x, y])
        if hit:
            target = node
            break
    assert target is not None, "no matched node of pane A is under the pointer anywhere"
    nb.page.mouse.click(x, y)
    nb.page.wait_for_function("([el, id]) => el.graphwidget.selected('a') === id", arg=[root.element_handle(), target],
                              timeout=10_000)
    other = d.counterpart(target, "a")
    assert nb.api(root, "gw.selected('b')") == other
    nb.run(1)
    nb.wait_output(1, f"selected: {target} {other}")
    nb.offline.assert_clean()


def test_kernel_selection_of_an_added_node_reaches_the_browser(opened: Dict[str, Any]) -> None:
    nb, root, d = opened["nb"], opened["root"], opened["diff"]
    added = d.added[0]
    nb.run(2)
    nb.page.wait_for_function("([el, id]) => el.graphwidget.selected('b') === id", arg=[root.element_handle(), added],
                              timeout=10_000)
    assert nb.api(root, "gw.status(arg, 'b')", added) == "added"
    assert nb.api(root, "gw.selected('a')") is None  # an added node has no counterpart
    nb.offline.assert_clean()


def test_gradcompare_magic_renders_the_diff_view(opened: Dict[str, Any]) -> None:
    nb, d = opened["nb"], opened["diff"]
    nb.run(3, timeout=120_000)
    root = nb.widget_root(3)
    assert nb.api(root, "gw.graphNodeCount('a')") == len(d.a) and nb.api(root, "gw.graphNodeCount('b')") == len(d.b)
    assert "homography_broadcast" in nb.api(root, "gw.panes()")
    nb.offline.assert_clean()
