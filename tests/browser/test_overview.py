"""The first view shows the model (docs/viewer.md, "The first view"): what a user sees when the widget or the export
opens, before touching anything, at 700, 1000 and 1400 px wide, light and dark.

Models (tests/browser/model_graphs.py OVERVIEW): a 12-block decoder and a ResNet-34-shaped conv net written by hand,
and a transformers GPT-2 built from a config, each traced (``gw.trace(model, x)``) and captured plainly
(``gw.capture(loss, module=model)``); and the seed diff. Every first view has all of its drawn items on screen, with
legible labels on at least 80 % of them; folds say ×N and open into their N members; frames and boxes say what the
module is; a diff opens with every node inside its pane. Screenshots go to tests/artifacts/screens/overview-*.png
and /tmp/gw-shots/ (both outside git) for people to look at.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest
from model_graphs import OVERVIEW, SCREENS, overview_graph
from pagekit import next_frame, toolbar_overflow, wait_ready, wait_until

import graphwidget as gw
from graphwidget.views.export import export_html

API = "document.querySelector('.graphwidget-root').graphwidget"
WIDTHS = (700, 1000, 1400)
SHOTS = Path("/tmp/gw-shots")
WIDE = "() => document.querySelector('.graphwidget-root').clientWidth > 600"
CASES = [(name, how) for name in OVERVIEW for how in ("trace", "capture")]


def needs(name: str) -> None:
    if name.startswith("gpt2"):
        pytest.importorskip("transformers", reason="GPT-2 is built with transformers (pip install transformers)")


def api(page: Any, expr: str, arg: Any = None) -> Any:
    return page.evaluate(f"async (arg) => {{ const a = {API}; return await ({expr}); }}", arg)


@pytest.fixture(scope="module")
def pages(tmp_path_factory: Any) -> Iterator[Dict[str, Path]]:
    """"<name>-<how>" (or "seed") → exported page, made on first use."""
    out = tmp_path_factory.mktemp("overview")

    class Lazy(dict):  # type: ignore[type-arg]
        def __missing__(self, key: str) -> Path:
            if key == "seed":
                inp = gw.examples.homography_inputs()
                d = gw.compare(gw.examples.homography_repeat, gw.examples.homography_broadcast, **inp,
                               labels=("repeat", "broadcast"), profile=True)
                self[key] = gw.export_html(d, out / "seed.html")
            else:
                name, how = key.rsplit("-", 1)
                needs(name)
                self[key] = export_html(overview_graph(name, how), out / f"{key}.html")
            return self[key]

    yield Lazy()


def open_page(watched: Any, path: Path, width: int = 1400, scheme: str = "light", height: int = 900) -> Any:
    w = watched(viewport={"width": width, "height": height}, color_scheme=scheme)
    w.page.goto(path.as_uri())
    wait_ready(w.page)
    next_frame(w.page)
    return w


def shoot(page: Any, name: str) -> None:
    SCREENS.mkdir(parents=True, exist_ok=True)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENS / f"overview-{name}.png"))
    page.screenshot(path=str(SHOTS / f"overview-{name}.png"))


def under_controls(page: Any, side: Any = None) -> List[str]:
    """Drawn items, and labels drawn beside their box, that a pane's own controls cover: its zoom buttons, its
    minimap when shown, a diff pane's title."""
    rects = api(page, "a.itemRects(arg)", side)
    rects += [{"id": "a label beside its box", **r} for r in api(page, "a.labelStats(arg).beside", side)]
    k = 0 if side in (None, "a") else 1
    controls = page.evaluate("""(k) => { const pane = document.querySelectorAll('.gw-pane')[k];
        return Array.from(pane.querySelectorAll('.gw-zoom, .gw-minimap, .gw-pane-title')).filter((e) => e.offsetParent !== null
            && getComputedStyle(e).display !== 'none').map((e) => { const r = e.getBoundingClientRect();
            return [e.className, r.left, r.top, r.right, r.bottom]; }); }""", k)
    return [f"{r['id']} under {c[0]}" for r in rects for c in controls
            if r["left"] < c[3] and c[1] < r["right"] and r["top"] < c[4] and c[2] < r["bottom"]]


def check_first_view(page: Any, what: str) -> Dict[str, Any]:
    outside = api(page, "a.outside()")
    assert outside == [], f"{what}: drawn items or frames outside the pane at open: {outside[:8]}"
    assert under_controls(page) == [], f"{what}: the pane's controls cover drawn items at open"
    st = api(page, "a.labelStats()")
    assert st["items"] > 0, f"{what}: nothing drawn"
    assert st["labelled"] >= 0.8 * st["items"], f"{what}: legible labels on {st['labelled']} of {st['items']} items"
    return st


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("name,how", CASES)
def test_first_view_is_the_whole_model_legible(watched: Any, pages: Dict[str, Path], name: str, how: str,
                                               scheme: str) -> None:
    needs(name)
    for width in WIDTHS:
        w = open_page(watched, pages[f"{name}-{how}"], width, scheme)
        page = w.page
        shoot(page, f"{name}-{how}-{width}-{scheme}")
        check_first_view(page, f"{name} ({how}) at {width} px, {scheme}")
        assert api(page, "a.panelShown()") is False, "the panel waits for a selection"
        assert toolbar_overflow(page) == [], f"the toolbar at {width} px"
        if width >= 1000:
            cut = page.evaluate("""() => { const t = document.querySelector('.gw-title'); const r = document.createRange();
                r.selectNodeContents(t); return t.getBoundingClientRect().width + 0.01 < r.getBoundingClientRect().width; }""")
            assert not cut, f"the title is cut at {width} px"
        # what a module is: every module drawn (box or frame) is titled with its class
        classes = overview_graph(name, how)["meta"]["modules"]
        for g in api(page, "a.groups()"):
            if g["kind"] == "module":
                assert g["cls"] == classes[g["id"][2:]] and f" · {g['cls']}" in g["label"], g
            assert "×" not in g["label"] or g["kind"] in ("repeat", "chain", "fanin"), g
        for f in api(page, "a.frames()"):
            if f["kind"] == "module":
                assert f" · {classes[f['id'][2:]]} · " in f["label"], f
        w.assert_clean()
        w.close()


@pytest.mark.parametrize("name,how,n,cls", [(name, how, n, cls) for how in ("trace", "capture") for name, n, cls in (
    ("decoder12", 12, "DecoderBlock"), ("gpt2_12", 12, "GPT2Block"), ("resnet34", 3, "BasicBlock"))])
def test_identical_blocks_fold_and_open_into_their_members(watched: Any, pages: Dict[str, Path], name: str, how: str,
                                                           n: int, cls: str) -> None:
    needs(name)
    w = open_page(watched, pages[f"{name}-{how}"], 1400)
    page = w.page
    folds = [g for g in api(page, "a.groups()") if g["kind"] == "repeat" and g["cls"] == cls]
    assert folds, api(page, "a.groups()")
    fold = max(folds, key=lambda g: g["count"])
    assert fold["count"] >= n and f"{cls} ×{fold['count']}" in fold["label"], fold
    members = api(page, "a.children(arg)", fold["id"])
    assert len(members) == fold["count"]
    api(page, "a.expand(arg)", fold["id"])
    next_frame(page)
    frame = next(f for f in api(page, "a.frames()") if f["id"] == fold["id"])
    assert f"{cls} ×{fold['count']}" in frame["label"]
    shown = {g["id"]: g for g in api(page, "a.groups()")}
    assert all(m in shown and shown[m]["cls"] == cls for m in members), "the fold opens into its members"
    # the camera followed: the opened fold's members are on screen
    on_screen = {r["id"] for r in api(page, "a.itemRects()")}
    assert set(members) & on_screen, "opening the fold shows what it holds"
    w.assert_clean()


def test_plain_capture_shows_module_names(watched: Any, pages: Dict[str, Path]) -> None:
    w = open_page(watched, pages["resnet34-capture"], 1400)
    page = w.page
    names = [g["label"] for g in api(page, "a.groups()")] + [f["label"] for f in api(page, "a.frames()")]
    assert any(x.startswith("layer1") for x in names) and any("BasicBlock" in x for x in names), names
    assert not any("AccumulateGrad ×" in x for x in names), "never titled by an op histogram when modules are known"
    w.assert_clean()


def test_fit_shows_everything(watched: Any, pages: Dict[str, Path]) -> None:
    w = open_page(watched, pages["decoder12-trace"], 1000)
    page = w.page
    folds = [g["id"] for g in api(page, "a.groups()") if g["kind"] == "repeat"]
    api(page, "a.expand(arg)", folds[0])
    api(page, "a.expandAll()")
    api(page, "a.fit()")
    next_frame(page)
    assert api(page, "a.outside()") == [], "Fit shows the whole drawing, even when it is big"
    w.assert_clean()


def blank_status_badges(page: Any, side: str) -> List[Dict[str, Any]]:
    """The side's status badges whose inside is one flat colour: a pill without its symbol or count (read from the
    canvas's pixels between the pill's round ends, where the glyph is drawn)."""
    return page.evaluate("""(side) => {
        const a = document.querySelector('.graphwidget-root').graphwidget;
        const c = document.querySelectorAll('.gw-pane canvas.gw-canvas')[side === 'a' ? 0 : 1];
        const r = c.getBoundingClientRect(), d = c.width / r.width, ctx = c.getContext('2d');
        const blank = [];
        for (const b of a.statusBadges(side)) {
            const x0 = Math.round((b.x - b.w / 2 + b.h * 0.3 - r.left) * d), x1 = Math.round((b.x + b.w / 2 - b.h * 0.3 - r.left) * d);
            const y0 = Math.round((b.y - b.h * 0.3 - r.top) * d), y1 = Math.round((b.y + b.h * 0.3 - r.top) * d);
            if (x0 < 0 || y0 < 0 || x1 > c.width || y1 > c.height || x1 <= x0 || y1 <= y0) continue;
            const px = ctx.getImageData(x0, y0, x1 - x0, y1 - y0).data;
            const [fr, fg, fb] = [px[0], px[1], px[2]];
            let ink = 0;
            for (let k = 0; k < px.length; k += 4) {
                if (Math.abs(px[k] - fr) + Math.abs(px[k + 1] - fg) + Math.abs(px[k + 2] - fb) > 150) ink++;
            }
            if (ink < 2) blank.push(b);
        }
        return blank; }""", side)


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_seed_diff_opens_fitted_and_legible(watched: Any, pages: Dict[str, Path], scheme: str) -> None:
    for width in WIDTHS:
        w = open_page(watched, pages["seed"], width, scheme)
        page = w.page
        shoot(page, f"seed-{width}-{scheme}")
        for side in ("a", "b"):
            assert api(page, "a.outside(arg)", side) == [], f"seed diff at {width} px: side {side} is cropped"
            assert under_controls(page, side) == [], f"seed diff at {width} px: side {side}'s controls cover items"
            st = api(page, "a.labelStats(arg)", side)
            assert st["labelled"] >= 0.8 * st["items"], f"seed diff at {width} px, side {side}: {st}"
            # every marked item says what it is at any zoom: its badge carries Δ, + or −, or a group's count
            badges = api(page, "a.statusBadges(arg)", side)
            assert badges and all(b["label"] in ("Δ", "+", "−") or b["label"].isdigit() for b in badges), badges
            assert blank_status_badges(page, side) == [], f"status badges drawn without their symbol at {width} px"
        assert api(page, "a.panel()") == "hidden"
        assert toolbar_overflow(page) == [], f"the diff's toolbar at {width} px"
        w.assert_clean()
        w.close()


def test_diff_pair_inspector_lists_what_differs_first_and_panel_never_covers_b(watched: Any,
                                                                              pages: Dict[str, Path]) -> None:
    w = open_page(watched, pages["seed"], 700)
    page = w.page
    changed = next(i for i in api(page, "a.visibleNodeIds('a')") if api(page, "a.status(arg, 'a')", i) == "changed")
    assert api(page, "a.select(arg, 'a')", changed)
    rows = page.eval_on_selector_all(".gw-pair tbody th", "(ths) => ths.map((t) => t.textContent)")
    firsts = [r.startswith("≠") for r in rows]
    assert firsts and firsts[0] and firsts == sorted(firsts, reverse=True), rows
    assert api(page, "a.panel()") == "below", "a narrow diff shows the panel below the panes"
    side = page.locator(".gw-side").bounding_box()
    for pane in page.locator(".gw-pane").all():
        box = pane.bounding_box()
        assert box["y"] + box["height"] <= side["y"] + 1, "the panel does not cover a pane"
    w.assert_clean()


def test_findings_open_by_themselves_and_badges_leave_labels_readable(watched: Any, tmp_path: Path) -> None:
    g = gw.trace(gw.examples.homography_repeat, **gw.examples.homography_inputs(2, 16, 16))
    g.advise()
    w = open_page(watched, gw.export_html(g, tmp_path / "seed.html"), 1400)
    page = w.page
    assert api(page, "a.panelShown()") is True
    assert page.locator(".gw-tab[data-tab=findings]").get_attribute("aria-selected") == "true"
    cause = api(page, "a.findings()")[0]["nodes"][0]
    api(page, "a.select(arg)", cause)
    next_frame(page)
    rects = {r["id"]: r for r in api(page, "a.itemRects()")}
    for b in api(page, "a.findingBadges()"):
        if b["id"] not in rects:
            continue
        r = rects[b["id"]]
        # the badge sits over the corner, outside the box: the label starts right of it and below its top
        assert b["x"] <= r["left"] + 4 and b["y"] <= r["top"] + 4, (b, r)
    # after a selection the minimap covers no node
    page.wait_for_timeout(250)
    mm = page.evaluate("""() => { const m = document.querySelector('.gw-minimap');
        if (!m || m.hidden) return null; const r = m.getBoundingClientRect();
        return { left: r.left, top: r.top, right: r.right, bottom: r.bottom }; }""")
    if mm:
        hit = [r["id"] for r in rects.values() if r["left"] < mm["right"] and mm["left"] < r["right"]
               and r["top"] < mm["bottom"] and mm["top"] < r["bottom"]]
        assert not hit, f"the minimap covers {hit}"
    w.assert_clean()


def test_wheel_inside_a_frame_scrolls_the_host_page(watched: Any, pages: Dict[str, Path], tmp_path: Path) -> None:
    """Colab's and VS Code's output frames, a docs page embedding the export: the frame does not scroll itself,
    the page around it does, and the wheel over the graph must scroll that page (not zoom)."""
    export = pages["decoder12-trace"]
    host = tmp_path / "host.html"
    host.write_text(f"""<!doctype html><html><body style="margin:0">
        <div style="height:300px">above</div>
        <iframe id="f" src="{export.as_uri()}" scrolling="no" style="width:900px;height:600px;border:0"></iframe>
        <div style="height:3000px">below</div></body></html>""", encoding="utf-8")
    w = watched(viewport={"width": 1000, "height": 800})
    page = w.page
    page.goto(host.as_uri())
    frame = page.frame_locator("#f")
    frame.locator('.graphwidget-root[data-gw-state="ready"]').wait_for(timeout=60_000)
    inner = page.frames[1]
    before = inner.evaluate(f"() => {API}.labelStats().scale")
    box = page.locator("#f").bounding_box()
    page.mouse.move(box["x"] + 300, box["y"] + 300)
    page.mouse.wheel(0, 400)
    scrolled = wait_until(lambda: page.evaluate("() => window.scrollY") > 0, timeout=5)
    assert scrolled, "the host page scrolls"
    assert inner.evaluate(f"() => {API}.labelStats().scale") == before, "the graph did not zoom"
    w.assert_clean()



@pytest.mark.slow
def test_a_notebook_output_column_keeps_the_toolbar_whole_and_gives_the_diff_panes_the_height(
        watched: Any, pages: Dict[str, Path]) -> None:
    """JupyterLab in a 1000 px window gives an output ~570 px wide; a diff widget there is 600 px tall. Its toolbar
    stays one whole line, and its summary strip folds to the verdict sentence (the numbers one click away) instead of
    taking half of the height in rows of numbers."""
    for key in ("seed", "decoder12-trace", "gpt2_12-trace"):
        w = open_page(watched, pages[key], 570, height=600)
        page = w.page
        shoot(page, f"{key}-570x600")
        assert toolbar_overflow(page) == [], f"{key}: the toolbar at 570 px"
        if key != "seed":
            check_first_view(page, f"{key} at 570 x 600")
            # the model, not two boxes named transformer and lm_head: its fold of twelve blocks is drawn
            assert any(g["kind"] == "repeat" for g in api(page, "a.groups()")), api(page, "a.groups()")
        if key == "seed":
            strip = page.locator(".gw-summary")
            assert strip.bounding_box()["height"] <= 0.25 * 600, "the strip leaves the panes their room"
            assert "same maths" in strip.inner_text(), "the verdict sentence stays"
            assert not page.locator(".gw-sum-cells").is_visible()
            for side in ("a", "b"):
                assert api(page, "a.outside(arg)", side) == [], f"side {side} is cropped"
                assert under_controls(page, side) == [], f"side {side}'s controls cover items"
            page.click(".gw-sum-toggle")
            assert page.locator(".gw-sum-cells").is_visible(), "the numbers are one click away"
            # a resize that would fold it again (still short) keeps what the user chose
            page.set_viewport_size({"width": 620, "height": 600})
            assert wait_until(lambda p=page: p.evaluate(WIDE)), "the view follows the window"
            next_frame(page)
            assert page.locator(".gw-sum-cells").is_visible(), "the user's choice holds over a resize"
        w.assert_clean()
        w.close()


def test_a_tall_diff_shows_its_numbers(watched: Any, pages: Dict[str, Path]) -> None:
    w = open_page(watched, pages["seed"], 1400, height=900)
    assert w.page.locator(".gw-sum-cells").is_visible(), "where there is room the strip shows its numbers"
    w.assert_clean()
