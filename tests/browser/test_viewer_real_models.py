"""The viewer on real models captured with ``gw.trace`` (GPT-2 and a TransformerEncoder, random weights, nothing
downloaded): the first view reads as the model's module tree, with text on it, and nothing floats over the nodes.

Screenshots of every first view (50, ~3k and ~10k nodes; 700, 1000 and 1400 px wide; light and dark) are written to
``tests/artifacts/screens/`` (git-ignored) for people to look at.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest
from model_graphs import SCREENS, model_graph
from pagekit import next_frame, wait_ready

from graphwidget.views.export import export_html

# Slow: GPT-2 graphs of ~3k and ~10k nodes (captured once, then cached in tests/artifacts/graphs), drawn in light
# and dark at three widths. Under pytest-xdist one worker runs the file: the module's exports are made once, not once
# per worker.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("real-model-views")]

API = "document.querySelector('.graphwidget-root').graphwidget"
WIDTHS = (700, 1000, 1400)
#: 50, ~3k and ~10k nodes
SCREEN_MODELS = ("encoder1", "gpt2_60", "gpt2_200")


def needs(name: str) -> None:
    if name.startswith(("gpt2", "bert")):
        pytest.importorskip("transformers", reason="GPT-2 and BERT are built with transformers (pip install transformers)")


@pytest.fixture(scope="module")
def exports(tmp_path_factory: Any) -> Iterator[Dict[str, Path]]:
    """name → exported page, made on first use."""
    out = tmp_path_factory.mktemp("models")
    made: Dict[str, Path] = {}

    class Lazy(dict):  # type: ignore[type-arg]
        def __missing__(self, name: str) -> Path:
            needs(name)
            made[name] = export_html(model_graph(name), out / f"{name}.html")
            return made[name]

    yield Lazy()


def api(page: Any, expr: str) -> Any:
    return page.evaluate(f"async () => {{ const a = {API}; return await ({expr}); }}")


def open_model(watched: Any, exports: Dict[str, Path], name: str, width: int = 1400, scheme: str = "light") -> Any:
    w = watched(viewport={"width": width, "height": 900}, color_scheme=scheme)
    w.page.goto(exports[name].as_uri())
    wait_ready(w.page)
    return w


def overlaps(a: Dict[str, float], b: Dict[str, float]) -> bool:
    return a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"] and b["top"] < a["bottom"]


def overlay_rects(page: Any) -> List[Dict[str, Any]]:
    """The legend strip and the minimap (when shown), in viewport pixels."""
    return page.evaluate("""() => [...document.querySelectorAll('.gw-legend, .gw-minimap')]
        .filter((e) => !e.hidden && e.getBoundingClientRect().width > 0)
        .map((e) => { const r = e.getBoundingClientRect();
          return { what: e.className, left: r.left, top: r.top, right: r.right, bottom: r.bottom }; })""")


def drawn_items(page: Any) -> List[Dict[str, Any]]:
    """Items on screen, cut to the canvas (an item half off the canvas is only drawn on it)."""
    return page.evaluate(f"""() => {{ const a = {API}; const c = document.querySelector('.gw-canvas').getBoundingClientRect();
        return a.itemRects().map((r) => ({{ id: r.id, left: Math.max(r.left, c.left), top: Math.max(r.top, c.top),
          right: Math.min(r.right, c.right), bottom: Math.min(r.bottom, c.bottom) }}))
          .filter((r) => r.right > r.left && r.bottom > r.top); }}""")


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("name", SCREEN_MODELS)
def test_first_view_has_text_and_nothing_over_the_nodes(watched: Any, exports: Dict[str, Path], name: str,
                                                        scheme: str) -> None:
    needs(name)
    SCREENS.mkdir(parents=True, exist_ok=True)
    for width in WIDTHS:
        w = open_model(watched, exports, name, width, scheme)
        page = w.page
        next_frame(page)
        page.screenshot(path=str(SCREENS / f"{name}_{width}_{scheme}.png"))
        labels = api(page, "a.labelCount()")
        shown = api(page, "a.nodeCount()")
        assert labels >= min(5, shown), f"{name} at {width} px: {labels} labels drawn on the first view"
        items = drawn_items(page)
        assert len(items) >= min(5, shown), f"{name} at {width} px opens with {len(items)} items on screen"
        for o in overlay_rects(page):
            hit = [it["id"] for it in items if overlaps(it, o)]
            assert not hit, f"{name} at {width} px ({scheme}): {o['what']} covers {hit[:5]}"
        dark = page.evaluate("""() => { const c = document.querySelector('.gw-canvas');
            const d = c.getContext('2d').getImageData(2, 2, 1, 1).data; return (d[0] + d[1] + d[2]) / 3 < 80; }""")
        assert dark == (scheme == "dark"), "the canvas follows the page's colour scheme"
        w.assert_clean()
        w.close()


def test_deep_gpt2_opens_as_its_module_tree(watched: Any, exports: Dict[str, Path]) -> None:
    needs("gpt2_60")
    w = open_model(watched, exports, "gpt2_60")
    page = w.page
    groups = {g["label"]: g for g in api(page, "a.groups()")}
    for k in (0, 30, 59):
        assert f"h.{k}" in groups and groups[f"h.{k}"]["kind"] == "module", sorted(groups)[:10]
    frames = [f["id"] for f in api(page, "a.frames()")]
    assert "m:transformer" in frames and "m:transformer.h" in frames
    assert not any("ops from" in label for label in groups), "blocks are named after what they hold"
    # a parameter sits inside its module: selecting it opens h.3, attn and c_attn around it
    doc = model_graph("gpt2_60")
    weight = next(n["id"] for n in doc["nodes"] if (n.get("tensor") or {}).get("name") == "transformer.h.3.attn.c_attn.weight")
    assert api(page, f"a.select({weight})")
    frames = [f["id"] for f in api(page, "a.frames()")]
    assert "m:transformer.h.3.attn.c_attn" in frames and "m:transformer.h.3" in frames
    w.assert_clean()


def test_open_group_is_a_frame_centred_and_closed_from_its_title(watched: Any, exports: Dict[str, Path]) -> None:
    needs("gpt2_60")
    w = open_model(watched, exports, "gpt2_60")
    page = w.page
    gid = "m:transformer.h.40"
    api(page, f"a.expand({json.dumps(gid)})")
    assert gid in [f["id"] for f in api(page, "a.frames()")]
    assert api(page, f"a.centre({json.dumps(gid)})"), "centre() works on an open group"
    c = page.locator(".gw-canvas").bounding_box()
    pos = api(page, f"a.nodeScreenPosition({json.dumps(gid)})")
    assert abs(pos["x"] - (c["x"] + c["width"] / 2)) < c["width"] * 0.3
    assert c["y"] <= pos["y"] <= c["y"] + c["height"]
    # a click on the frame's title closes it again
    rect = next(f["rect"] for f in api(page, "a.frames()") if f["id"] == gid)
    page.mouse.click(rect["left"] + 30, rect["top"] + 6)
    api(page, "a.idle()")
    assert gid not in [f["id"] for f in api(page, "a.frames()")]
    assert gid in [g["id"] for g in api(page, "a.groups()")]
    w.assert_clean()


def test_fit_after_opening_everything_is_not_a_line(watched: Any, exports: Dict[str, Path]) -> None:
    needs("gpt2_60")
    w = open_model(watched, exports, "gpt2_60", width=1000)
    page = w.page
    api(page, "a.expandAll()")
    assert api(page, "a.nodeCount()") == api(page, "a.graphNodeCount()")
    api(page, "a.fit()")
    items = drawn_items(page)
    assert items, "something is on screen after Fit"
    width = max(r["right"] for r in items) - min(r["left"] for r in items)
    assert width >= 100, f"the fitted drawing is {width:.0f} px wide: a line"
    assert api(page, "a.labelCount()") > 0
    w.assert_clean()
