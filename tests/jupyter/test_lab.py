"""The widget in a real JupyterLab: a real mouse click reaches the kernel, the kernel's ``w.selected = K`` reaches
the browser, and ``%gradgraph`` renders. Offline: every non-loopback request is aborted and must not happen."""
from __future__ import annotations

from typing import Any, Dict, Iterator

import pytest
from lab_helpers import Lab, LabNotebook, clickable_node, new_offline_page
from pictures import same_picture, shapes

import graphwidget as gw

pytestmark = [pytest.mark.jupyterlab, pytest.mark.browser, pytest.mark.slow]

SIZES = "batch=2, height=16, width=16"


def homography_graph() -> gw.GradGraph:
    """The graph the notebook builds (ids are deterministic: same program, same ids)."""
    inp = gw.examples.homography_inputs(batch=2, height=16, width=16)
    return gw.capture(gw.examples.homography_repeat(**inp), title="homography")


@pytest.fixture(scope="module")
def homography(lab: Lab, browser: Any) -> Iterator[Dict[str, Any]]:
    """The homography notebook open and run once: cell 0 shows ``w``; the other cells are run by the tests."""
    g = homography_graph()
    kernel_pick = g.nodes(op="RepeatBackward0")[0]
    url = lab.write_notebook("homography.ipynb", [
        "import graphwidget as gw\n"
        f"inp = gw.examples.homography_inputs({SIZES})\n"
        "g = gw.capture(gw.examples.homography_repeat(**inp), title='homography')\n"
        "w = gw.GraphWidget(g)\n"
        "w",
        "print('selected:', w.selected)",
        f"w.selected = {kernel_pick}",
    ])
    page = new_offline_page(browser)
    try:
        nb = LabNotebook(page, url)
        nb.run(0)
        root = nb.widget_root(0)
        yield {"nb": nb, "root": root, "graph": g, "kernel_pick": kernel_pick}
    finally:
        page.context.close()


def test_widget_draws_the_whole_graph(homography: Dict[str, Any]) -> None:
    nb, root, g = homography["nb"], homography["root"], homography["graph"]
    assert nb.api(root, "gw.graphNodeCount()") == len(g)
    assert nb.api(root, "gw.graphEdgeCount()") == g.nx.number_of_edges()
    assert 0 < nb.api(root, "gw.nodeCount()") <= len(g)  # drawn items: nodes, or groups of them
    nb.offline.assert_clean()


def test_click_on_a_node_reaches_the_kernel(homography: Dict[str, Any]) -> None:
    nb, root, g = homography["nb"], homography["root"], homography["graph"]
    page = nb.page
    root.scroll_into_view_if_needed()
    current = nb.api(root, "gw.selected()")
    # Click only where the node is really under the pointer: the view's canvas, not a panel over it.
    target, x, y = clickable_node(nb, root, skip=(current, homography["kernel_pick"]))
    page.mouse.click(x, y)
    page.wait_for_function("([el, id]) => el.graphwidget.selected() === id", arg=[root.element_handle(), target],
                           timeout=10_000)
    assert g.node(target)["op"] in nb.api(root, "gw.inspectorText()")
    nb.run(1)
    nb.wait_output(1, f"selected: {target}")
    assert nb.output_text(1).strip() == f"selected: {target}"
    nb.offline.assert_clean()


def test_kernel_selection_reaches_the_browser(homography: Dict[str, Any]) -> None:
    nb, root, g = homography["nb"], homography["root"], homography["graph"]
    pick = homography["kernel_pick"]
    nb.run(2)
    nb.page.wait_for_function("([el, id]) => el.graphwidget.selected() === id", arg=[root.element_handle(), pick],
                              timeout=10_000)
    assert nb.api(root, "gw.selected()") == pick
    assert g.node(pick)["op"] in nb.api(root, "gw.inspectorText()")
    nb.offline.assert_clean()


def test_save_menu_downloads_the_widgets_picture(homography: Dict[str, Any], tmp_path: Any) -> None:
    """Save… → SVG picture in the notebook's output area: the popover opens above JupyterLab's own layers, the
    download is the widget's view (every node drawn on screen has its shape) and the same SVG as ``toSVG()``."""
    import xml.etree.ElementTree as ET
    nb, root = homography["nb"], homography["root"]
    page = nb.page
    root.scroll_into_view_if_needed()
    root.locator("[data-action=save]").click()
    item = root.locator("[data-action=save-svg]")
    item.wait_for(state="visible")
    # the item is what a click there hits (not a JupyterLab panel drawn over it)
    box = item.bounding_box()
    hit = page.evaluate("([x, y]) => document.elementFromPoint(x, y)?.getAttribute('data-action')",
                        [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2])
    assert hit == "save-svg", hit
    with page.expect_download() as dl:
        item.click()
    path = tmp_path / dl.value.suggested_filename
    dl.value.save_as(path)
    svg = path.read_text()
    on_screen = {r["id"] for r in nb.api(root, "gw.itemRects()") if isinstance(r["id"], int)}
    drawn, _ = shapes(ET.fromstring(svg.encode()))
    assert drawn and drawn == on_screen
    assert same_picture(svg, nb.api(root, "gw.toSVG()"))
    assert not item.is_visible()
    nb.offline.assert_clean()


LOOP_CELL = ("x = torch.randn(8, 4, requires_grad=True)\n"
             "total = x[0].sum() * 0\n"
             "for i in range(8):\n"
             "    total = total + x[i, 0] * x[i, 1]\n"
             "total")
LOOP_LINE = "total = total + x[i, 0] * x[i, 1]"


def test_gradgraph_magic_renders_in_lab(lab: Lab, lab_page: Any) -> None:
    inp = gw.examples.homography_inputs(batch=2, height=16, width=16)
    expected = gw.trace(gw.examples.homography_broadcast, **inp)
    scope: Dict[str, Any] = {"torch": __import__("torch")}
    exec(LOOP_CELL.replace("\ntotal", "\nresult = total"), scope)
    loop_graph = gw.capture(scope["result"])
    url = lab.write_notebook("magic.ipynb", [
        "%load_ext graphwidget\n"
        "import torch\n"
        "import graphwidget as gw\n"
        f"inp = gw.examples.homography_inputs({SIZES})",
        "%gradgraph --trace gw.examples.homography_broadcast(**inp)",
        "%%gradgraph --trace --title 'select loop'\n" + LOOP_CELL,
    ])
    nb = LabNotebook(lab_page, url)
    nb.run(0)
    nb.run(1)
    root = nb.widget_root(1)
    assert nb.api(root, "gw.graphNodeCount()") == len(expected)
    nb.run(2)
    loop = nb.widget_root(2)
    assert nb.api(loop, "gw.graphNodeCount()") == len(loop_graph)
    # Traced in the kernel: a node made by the loop line shows that line (as In[3]:5) in the inspector.
    node = next(n for n in loop_graph.nodes(op="MulBackward0")
                if all(loop_graph.node(p)["op"] == "SelectBackward0" for p in loop_graph.nx.predecessors(n)))
    nb.api(loop, "gw.select(arg)", node)
    assert nb.api(loop, "gw.selected()") == node
    text = nb.api(loop, "gw.inspectorText()")
    assert LOOP_LINE in text, text
