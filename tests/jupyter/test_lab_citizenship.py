"""The widget as a citizen of a real JupyterLab notebook: the notebook keeps scrolling under the mouse wheel (Ctrl
zooms), and the view follows JupyterLab's theme (light and dark) — canvas, legend and minimap included.
Screenshots of both themes go to tests/artifacts/screens/lab_*.png."""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest
from lab_helpers import Lab, LabNotebook, new_offline_page

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "browser"))
from model_graphs import SCREENS  # noqa: E402
from pagekit import wait_until  # noqa: E402

pytestmark = [pytest.mark.jupyterlab, pytest.mark.browser, pytest.mark.slow]

FILLER = "print('\\n'.join(f'line {i}' for i in range(60)))"


@pytest.fixture(scope="module")
def notebook(lab: Lab, browser: Any) -> Iterator[Dict[str, Any]]:
    """A traced 4-layer TransformerEncoder between two long outputs, so the notebook scrolls."""
    url = lab.write_notebook("citizen.ipynb", [
        FILLER,
        "import torch, graphwidget as gw\n"
        "torch.manual_seed(0)\n"
        "layer = torch.nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, batch_first=True)\n"
        "enc = torch.nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)\n"
        "w = gw.GraphWidget(gw.trace(lambda m, x: m(x).pow(2).mean(), enc, torch.randn(2, 5, 16)), height=500)\n"
        "w",
        FILLER,
    ])
    page = new_offline_page(browser)
    try:
        nb = LabNotebook(page, url)
        nb.run(0)
        nb.run(1)
        nb.run(2)
        yield {"nb": nb, "root": nb.widget_root(1)}
    finally:
        page.context.close()


def scroller_top(nb: LabNotebook) -> float:
    return float(nb.page.evaluate("""() => { const p = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
        const s = [p.querySelector('.jp-WindowedPanel-outer'), p.querySelector('.jp-Notebook')].find((e) => e && e.scrollHeight > e.clientHeight);
        return s ? s.scrollTop : -1; }"""))


def spread(nb: LabNotebook, root: Any) -> float:
    """Drawn distance between two nodes: changes with the zoom only."""
    return float(nb.api(root, """(() => { const ids = gw.visibleNodeIds(); const a = gw.nodeScreenPosition(ids[0]),
        b = gw.nodeScreenPosition(ids[ids.length - 1]); return Math.abs(a.x - b.x) + Math.abs(a.y - b.y); })()"""))


def test_wheel_scrolls_the_notebook_and_ctrl_wheel_zooms(notebook: Dict[str, Any]) -> None:
    nb, root = notebook["nb"], notebook["root"]
    page = nb.page
    root.scroll_into_view_if_needed()
    canvas = root.locator(".gw-canvas").bounding_box()
    page.mouse.move(canvas["x"] + canvas["width"] / 2, canvas["y"] + canvas["height"] / 2)
    top, before = scroller_top(nb), spread(nb, root)
    assert top >= 0, "the notebook scrolls"
    page.mouse.wheel(0, 250)
    assert wait_until(lambda: scroller_top(nb) > top), "a plain wheel over the graph scrolls the notebook"
    assert spread(nb, root) == pytest.approx(before, abs=0.5)
    root.scroll_into_view_if_needed()
    canvas = root.locator(".gw-canvas").bounding_box()
    page.mouse.move(canvas["x"] + canvas["width"] / 2, canvas["y"] + canvas["height"] / 2)
    top = scroller_top(nb)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -250)
    page.keyboard.up("Control")
    assert wait_until(lambda: spread(nb, root) > before * 1.1), "Ctrl + wheel zooms"
    assert scroller_top(nb) == pytest.approx(top, abs=1)
    nb.offline.assert_clean()


def set_theme(nb: LabNotebook, name: str, light: bool) -> None:
    nb.page.evaluate("(t) => window.jupyterapp.commands.execute('apputils:change-theme', { theme: t })", name)
    nb.page.wait_for_function("(l) => document.body.dataset.jpThemeLight === String(l)", arg=light, timeout=20_000)


#: the colours the view should have in the lab's theme, and the ones it has (canvas: a corner pixel of the drawing)
COLOURS = """(el) => {
    const probe = document.createElement('div'); document.body.appendChild(probe);
    const css = (v) => { probe.style.background = `var(${v})`; return getComputedStyle(probe).backgroundColor; };
    const want = { canvas: css('--jp-layout-color0'), panel: css('--jp-layout-color1') }; probe.remove();
    const d = el.querySelector('.gw-canvas').getContext('2d').getImageData(2, 2, 1, 1).data;
    return { want, canvas: `rgb(${d[0]}, ${d[1]}, ${d[2]})`,
             legend: getComputedStyle(el.querySelector('.gw-legend')).backgroundColor,
             minimap: getComputedStyle(el.querySelector('.gw-minimap')).backgroundColor }; }"""


@pytest.mark.parametrize("theme, light", [("JupyterLab Dark", False), ("JupyterLab Light", True)])
def test_view_follows_the_lab_theme(notebook: Dict[str, Any], theme: str, light: bool) -> None:
    nb, root = notebook["nb"], notebook["root"]
    set_theme(nb, theme, light)
    root.scroll_into_view_if_needed()
    if root.locator(".gw-minimap").is_hidden():
        root.locator("button[data-action=minimap]").click()
    nb.api(root, "gw.fit()")  # a fitted drawing leaves the corners to the background

    def themed() -> bool:
        g = root.evaluate(COLOURS)
        rgb = [int(x) for x in re.findall(r"\d+", g["want"]["canvas"])[:3]]
        lab_is_light = sum(rgb) > 3 * 128  # the new theme's stylesheet is in (until then the old colours hold)
        return (lab_is_light == light and g["canvas"] == g["want"]["canvas"]
                and g["legend"] == g["minimap"] == g["want"]["panel"])

    # the theme's stylesheet comes in after the switch, and the view reads the theme again then (theme.ts)
    assert wait_until(themed, timeout=20), f"the view did not take the {theme} theme: {root.evaluate(COLOURS)}"
    SCREENS.mkdir(parents=True, exist_ok=True)
    root.screenshot(path=str(SCREENS / f"lab_{'light' if light else 'dark'}.png"))
    got = root.evaluate(COLOURS)
    assert got["canvas"] == got["want"]["canvas"], got
    assert got["legend"] == got["want"]["panel"], got
    assert got["minimap"] == got["want"]["panel"], got
    nb.offline.assert_clean()
