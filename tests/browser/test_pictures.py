"""The picture menu (Save…: SVG, PNG) and the automation API's ``toSVG()`` on real exports in Chromium, at notebook
sizes: the files are downloaded through the menu, and the SVG is checked against the view it was taken of (every drawn node
and group on screen has its shape, named by id; the legend, pane titles and the diff's sentence are in it)."""
from __future__ import annotations

import struct
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Tuple

import pytest
from pagekit import API, wait_ready
from pictures import same_picture, shapes

import graphwidget as gw

SVG = "{http://www.w3.org/2000/svg}"


def api(page: Any, expr: str) -> Any:
    return page.evaluate(f"async () => {{ const a = {API}; return await ({expr}); }}")


def save(page: Any, kind: str, tmp: Path) -> Tuple[str, bytes]:
    """Opens the toolbar's Save menu, checks it is whole inside the window, and saves through it."""
    page.click("[data-action=save]")
    item = page.locator(f"[data-action=save-{kind}]")
    item.wait_for(state="visible")
    box, view = item.bounding_box(), page.viewport_size
    assert box and box["x"] >= 0 and box["y"] >= 0, box
    assert box["x"] + box["width"] <= view["width"] and box["y"] + box["height"] <= view["height"], (box, view)
    assert page.get_attribute("[data-action=save]", "aria-expanded") == "true"
    with page.expect_download() as dl:
        item.click()
    assert not item.is_visible(), "the menu closes once a picture is chosen"
    path = tmp / dl.value.suggested_filename
    dl.value.save_as(path)
    return dl.value.suggested_filename, path.read_bytes()


def texts(root: ET.Element) -> str:
    return " ".join(e.text or "" for e in root.iter(f"{SVG}text"))


def png_size(data: bytes) -> Tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def inputs() -> Any:
    return gw.examples.homography_inputs(batch=2, height=16, width=16)


@pytest.mark.parametrize("scheme,width", [("light", 950), ("dark", 600)])
def test_graph_picture_is_the_view_on_screen(watched: Any, tmp_path: Path, inputs: Any, scheme: str,
                                             width: int) -> None:
    g = gw.profile(gw.examples.homography_repeat, **inputs, repeat=2)
    w = watched(viewport={"width": width, "height": 530}, color_scheme=scheme, accept_downloads=True)
    w.page.goto(gw.export_html(g, tmp_path / "g.html").as_uri())
    wait_ready(w.page)
    page = w.page
    svg = api(page, "a.toSVG()")
    root = ET.fromstring(svg.encode())
    on_screen = api(page, "a.itemRects()")
    nodes, groups = shapes(root)
    assert nodes == {r["id"] for r in on_screen if isinstance(r["id"], int)}
    assert groups == {r["id"] for r in on_screen if isinstance(r["id"], str)}
    assert nodes, "no node shape in the picture"
    words = texts(root)
    assert "Colour: backward time (log)" in words and "no data" in words  # the legend
    name, data = save(page, "svg", tmp_path)
    assert name == "graphwidget-graph.svg"
    assert same_picture(data.decode(), svg)  # the button writes what toSVG() gives for the same view
    pw, ph = int(root.get("width")), int(root.get("height"))
    assert 0 < pw <= width and 0 < ph <= 530
    name, data = save(page, "png", tmp_path)
    assert name.endswith(".png") and png_size(data) == (2 * pw, 2 * ph)
    # Escape closes an open menu without saving
    page.click("[data-action=save]")
    page.locator("[data-action=save-svg]").wait_for(state="visible")
    page.keyboard.press("Escape")
    assert not page.locator("[data-action=save-svg]").is_visible()
    # the view changed: the picture follows it
    group = next((r["id"] for r in on_screen if isinstance(r["id"], str)), None)
    if group is not None:
        api(page, f"a.expand({group!r})")
        api(page, "a.idle()")
        after, _ = shapes(ET.fromstring(api(page, "a.toSVG()").encode()))
        assert after == {r["id"] for r in api(page, "a.itemRects()") if isinstance(r["id"], int)} and after != nodes
    w.assert_clean()
    assert w.errors == []


def test_diff_picture_holds_both_panes_and_the_sentence(watched: Any, tmp_path: Path, inputs: Any) -> None:
    d = gw.compare(gw.examples.homography_repeat, gw.examples.homography_broadcast, **inputs,
                   labels=("repeat", "broadcast"))
    w = watched(viewport={"width": 800, "height": 530}, accept_downloads=True)
    w.page.goto(gw.export_html(d, tmp_path / "d.html").as_uri())
    wait_ready(w.page)
    page = w.page
    name, data = save(page, "svg", tmp_path)
    root = ET.fromstring(data)
    panes = [e for e in root.iter(f"{SVG}svg") if e.get("data-pane") is not None]
    assert [p.get("data-pane") for p in panes] == ["0", "1"]
    for k, side in enumerate(("a", "b")):
        nodes, _ = shapes(panes[k])
        assert nodes == {r["id"] for r in api(page, f"a.itemRects({side!r})") if isinstance(r["id"], int)}
    words = " ".join(texts(root).split())
    assert "repeat" in words and "broadcast" in words and "changed" in words
    sentence = api(page, "a.summaryText()").split(";")[0]
    assert " ".join(sentence.split()) in words
    assert png_size(save(page, "png", tmp_path)[1]) == (2 * int(root.get("width")), 2 * int(root.get("height")))
    w.assert_clean()
    assert w.errors == []
