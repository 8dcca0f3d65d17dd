"""The widget in a real Jupyter Notebook 7 (``jupyter notebook``: the classic-style UI built from JupyterLab's
components), on loopback, driven by Debian's Chromium through Playwright.

A notebook whose cell captures a small real graph as its last expression (the graph displays itself as the widget)
is opened and run; the view must draw the whole graph at a sensible size inside the notebook, a real mouse click on
a node must set ``selected`` on the kernel's widget (read back by running a cell), and the page must send nothing
off the machine. A screenshot goes to /tmp/gw-shots/notebook7.png.
"""
from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest
from lab_helpers import Lab, LabNotebook, clickable_node, jupyter_server, missing_notebook7, new_offline_page

import graphwidget as gw

pytestmark = [
    pytest.mark.jupyterlab, pytest.mark.browser, pytest.mark.slow,
    pytest.mark.skipif(missing_notebook7() is not None, reason=str(missing_notebook7())),
]

SHOT = Path("/tmp/gw-shots/notebook7.png")
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
CAPTURE = ("gw.capture(gw.examples.homography_repeat("
           "**gw.examples.homography_inputs(batch=2, height=8, width=8)), title='homography')")
#: Run after the click: the kernel's one GraphWidget (the one the graph's display made) and its selection.
READ_BACK = ("import gc\n"
             # type(), not isinstance(): isinstance reads __class__, which wakes torch's deprecated lazy attributes.
             "ws = [o for o in gc.get_objects() if issubclass(type(o), gw.GraphWidget)]\n"
             "print(f'widgets={len(ws)} model={ws[0].model_id} selected={ws[0].selected}')")


def homography_graph() -> gw.GradGraph:
    """The graph the notebook captures (ids are deterministic: same program, same ids)."""
    return eval(CAPTURE, {"gw": gw})  # noqa: S307 - our own constant, so the test and the notebook share it


@pytest.fixture(scope="module")
def notebook7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """One Notebook 7 server for this module (stopped by PID afterwards)."""
    with jupyter_server(tmp_path_factory.mktemp("notebook7"), "notebook") as server:
        yield server


@pytest.fixture(scope="module")
def opened(notebook7: Lab, browser: Any) -> Iterator[Dict[str, Any]]:
    """The notebook open in Notebook 7's /notebooks page, cell 0 run: it shows the captured graph's widget."""
    notebook7.write_notebook("homography7.ipynb", [
        "import graphwidget as gw\n" + CAPTURE,
        READ_BACK,
    ])
    page = new_offline_page(browser)
    console: List[str] = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
    try:
        nb = LabNotebook(page, f"{notebook7.url}/notebooks/homography7.ipynb")
        nb.run(0, timeout=90_000)
        root = nb.widget_root(0, timeout=60_000)
        yield {"nb": nb, "root": root, "graph": homography_graph(), "console": console, "server": notebook7}
        if console:  # shown with -rA / -s: what Notebook 7 itself logs is worth seeing, not failing on
            print("Notebook 7 console errors/warnings:\n  " + "\n  ".join(console))
        ours = [m for m in console if "graphwidget" in m.lower() or "anywidget" in m.lower()]
        assert ours == [], f"console errors/warnings from the widget: {ours}"
        nb.offline.assert_clean()
    finally:
        page.context.close()


def test_notebook7_is_the_notebook_app(opened: Dict[str, Any]) -> None:
    """The page really is Notebook 7 (its shell, not JupyterLab's) and the notebook's kernel is up."""
    page = opened["nb"].page
    assert urllib.parse.urlsplit(page.url).path.startswith("/notebooks/")
    assert page.evaluate("() => window.jupyterapp.name") == "Jupyter Notebook"
    assert page.evaluate("() => window.jupyterapp.version").split(".")[0] == "7"
    assert page.locator(".jp-LabShell").count() == 0


def test_widget_draws_the_whole_graph_in_notebook7(opened: Dict[str, Any]) -> None:
    nb, root, g = opened["nb"], opened["root"], opened["graph"]
    assert nb.api(root, "gw.graphNodeCount()") == len(g)
    assert nb.api(root, "gw.graphEdgeCount()") == g.nx.number_of_edges()
    assert 0 < nb.api(root, "gw.nodeCount()") <= len(g)
    # Sized sensibly: as wide as most of the cell's output area, a usable height, inside the viewport's width.
    root.scroll_into_view_if_needed()
    box = root.bounding_box()
    out = nb.cell(0).locator(".jp-OutputArea-output").first.bounding_box()
    viewport = nb.page.viewport_size
    assert box is not None and out is not None and viewport is not None
    assert box["width"] >= 0.8 * out["width"], (box, out)
    assert box["height"] >= 250, box
    assert box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"] + 1, (box, viewport)
    nb.offline.assert_clean()


def test_click_on_a_node_sets_selected_in_the_kernel(opened: Dict[str, Any]) -> None:
    nb, root, g = opened["nb"], opened["root"], opened["graph"]
    page = nb.page
    root.scroll_into_view_if_needed()
    target, x, y = clickable_node(nb, root, skip=(nb.api(root, "gw.selected()"),))
    page.mouse.click(x, y)
    page.wait_for_function("([el, id]) => el.graphwidget.selected() === id", arg=[root.element_handle(), target],
                           timeout=15_000)
    assert g.node(target)["op"] in nb.api(root, "gw.inspectorText()")
    SHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOT))
    # The view in the page is the one of the kernel's widget: same model id in the cell's output.
    model_id = page.evaluate(
        """(mime) => {
            const cell = window.jupyterapp.shell.currentWidget.content.widgets[0];
            const out = cell.model.outputs.get(0);
            return out && out.data[mime] ? out.data[mime].model_id : null;
        }""", WIDGET_MIME)
    assert model_id, "cell 0's output holds no widget view"
    nb.run(1, timeout=60_000)
    expected = f"widgets=1 model={model_id} selected={target}"
    nb.wait_output(1, expected, timeout=30_000)
    assert nb.output_text(1).strip() == expected
    nb.offline.assert_clean()
