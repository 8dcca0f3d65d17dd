"""Backward memory: gw.profile/trace(memory=True), g.memory(), checkpoint candidates, the advisor rule, the diff's
memory, the timeline figure and its click in the export (docs/memory.md).

The chain's saved activations are known by construction; the allocator's peak is checked against an independent
``torch.profiler`` run written here; on GPT-2 (from a config) and a hand-written ResNet, checkpointing the top
candidate must lower the measured peak by at least 70 % of the prediction, with bit-identical gradients.
"""
from __future__ import annotations

import json

import pytest
import torch
from memory_models import TanhChain, gpt2_small, independent_peak, resnet

import graphwidget as gw
from graphwidget.analysis.memory_accounting import Accounting, predicted_backward_order
from graphwidget.analysis.memory_checkpoints import checkpoint_candidates
from graphwidget.attribution.memory import step_peak

B, W, N = 2048, 256, 6  # batch, width, layers: activations (B x W) outweigh the weights (W x W) eight times
U = B * W * 4  # one activation of the chain, float32


def chain():
    torch.manual_seed(0)
    return TanhChain(N, W), torch.randn(B, W)


def chain_line() -> int:
    """The line of TanhChain.forward that makes every node."""
    import inspect
    lines, first = inspect.getsourcelines(TanhChain.forward)
    return first + next(i for i, t in enumerate(lines) if "torch.tanh(layer(x))" in t)



# -- the chain: known by construction ------------------------------------------------------------------------------
def test_saved_activations_match_the_construction_at_every_point():
    m, x = chain()
    g = gw.profile(m, x, repeat=1, warmup=0, memory=True)
    assert g.summary()["saved_activation_bytes"] == (N + 1) * U  # the input and every tanh's output
    acc = Accounting(g)
    mem = g.meta["memory"]
    assert mem["forward_points"] == 2 * N + 1 and acc.n == len(mem["nodes"])
    for p in range(acc.n):
        v = acc.point_nodes[p]
        d = g.node(v)
        layer = int(d["module"].split(".")[1]) if d.get("module") else None
        if p < acc.forward_points and d["op"] == "TanhBackward0":
            k = sum(1 for q in range(p + 1) if g.node(acc.point_nodes[q])["op"] == "TanhBackward0")
            assert acc.saved[p] == (k + 1) * U, (p, d["op"])  # the input and k tanh outputs
        if p >= acc.forward_points and d["op"] == "AddmmBackward0":
            assert layer is not None
            # the input (saved by layer 0's addmm alone) and the outputs of the layers before this one
            assert acc.saved[p] == ((layer + 1) * U if layer > 0 else 0), (p, layer)
    rep = g.memory(top=100)
    peak = rep.peak
    # By construction the peak is the last layer's AddmmBackward0: the tanh outputs of the layers before it and the
    # input are still saved, and it writes the gradient of its input (U), its weight's (W x W) and its bias's (W).
    last = [v for v in g.nodes(op="AddmmBackward0") if g.node(v)["module"] == f"layers.{N - 1}"]
    assert (peak["phase"], peak["node"], peak["module"]) == ("backward", last[0], f"layers.{N - 1}")
    # the input existed before the step, so the allocator's figure does not hold it: the parts of the peak are the
    # saved activations the step allocated, and it is listed apart, as resident, with the parameters
    assert acc.saved[peak["point"]] == N * U
    assert peak["by_kind"]["saved activations"] == (N - 1) * U
    assert peak["by_kind"]["gradients"] == U + W * W * 4 + W * 4
    # what the allocator holds beyond the graph is the gradient the node consumed, alive while it ran (and a few
    # bytes of the profiler's own)
    assert peak["inputs_bytes"] == U
    assert U <= peak["by_kind"]["other (allocator minus graph)"] <= U + 4096
    assert sum(peak["by_kind"].values()) == peak["bytes"]  # the parts add up to the peak
    assert peak["resident"] == {"parameters": sum(p.numel() * 4 for p in m.parameters()),
                                "saved inputs (existed before the step)": U}
    # its holders: the input, saved by layer 0's addmm alone, and the output of layer k's tanh, saved by that tanh
    # and by layer k+1's addmm (one storage), for k < N-1; each U bytes, each at the chain's line
    held = [h for h in rep.holders if h["kind"] == "saved activation"]
    addmm_of = [sorted(g.node(s)["module"] for s in h["savers"] if g.node(s)["op"] == "AddmmBackward0")
                for h in held]
    assert sorted(addmm_of) == [[f"layers.{j}"] for j in range(N)]
    assert sorted(sorted(g.node(s)["op"] for s in h["savers"]) for h in held) == \
        [["AddmmBackward0"]] + [["AddmmBackward0", "TanhBackward0"]] * (N - 1)
    assert {h["bytes"] for h in held} == {U}
    assert {h["source"].rsplit("/", 1)[-1] for h in held} == {f"memory_models.py:{chain_line()}"}

def test_allocator_peak_within_ten_percent_of_an_independent_measure():
    m, x = chain()
    g = gw.profile(m, x, repeat=1, warmup=1, memory=True)
    ours = g.memory().peak
    assert ours["source"] == "allocator"
    m.zero_grad(set_to_none=True)  # as in profile's runs: every parameter's gradient is a fresh tensor
    ref = independent_peak(lambda: m(x).backward())
    assert abs(ours["bytes"] - ref) <= 0.1 * ref, (ours["bytes"], ref)
    # and the graph's part of it that the step allocated never exceeds what the allocator saw there
    assert 0 < ours["graph_bytes"] - ours["inputs_bytes"] <= ours["bytes"]


def test_inputs_that_existed_before_the_step_are_found_as_arguments_closures_and_globals():
    m, x = chain()
    as_global = eval("lambda: m(x)", {"m": m, "x": x})  # noqa: S307 -- a function whose x is a global, as in a notebook
    for fn, args in ((m, (x,)), (lambda: m(x), ()), (as_global, ())):
        g = gw.trace(fn, *args, memory=True)
        storage = next(s["storage"] for v in g.nodes(op="AddmmBackward0") if g.node(v)["module"] == "layers.0"
                       for s in g.node(v)["saved"] if s["name"] == "mat1")
        assert storage in g.meta["memory"]["inputs"]
        assert g.memory().peak["inputs_bytes"] == U


def test_memory_profiling_never_changes_a_gradient():
    m, x = chain()
    m.zero_grad(set_to_none=True)
    m(x).backward()
    ref = [p.grad.clone() for p in m.parameters()]
    m.zero_grad(set_to_none=True)
    gw.profile(m, x, repeat=2, warmup=0, memory=True)
    assert all(torch.equal(p.grad, r) for p, r in zip(m.parameters(), ref))
    m.zero_grad(set_to_none=True)
    gw.trace(m, x, memory=True).output.backward()
    assert all(torch.equal(p.grad, r) for p, r in zip(m.parameters(), ref))


def test_memory_run_is_never_a_measured_run():
    m, x = chain()
    g = gw.profile(m, x, repeat=2, warmup=0, memory=True)
    assert g.meta["timing"]["runs_used"] >= 1 and g.meta["timing"]["warmup"] == 0
    assert not any(e for e in g.meta["memory"]["module_inputs"].values() if not isinstance(e, list))


def test_trace_memory_predicts_the_backward_and_says_so():
    m, x = chain()
    g = gw.trace(m, x, memory=True)
    rep = g.memory()
    assert Accounting(g).predicted_backward
    assert rep.peak["source"] == "graph"  # no backward ran: the allocator cannot speak for it
    measured = gw.profile(m, x, repeat=1, warmup=0, memory=True)
    acc = Accounting(measured)
    assert acc.point_nodes[acc.forward_points:] == predicted_backward_order(measured)


def test_peak_bytes_per_node_add_up_and_travel_in_json():
    m, x = chain()
    g = gw.profile(m, x, repeat=1, warmup=0, memory=True)
    peak = g.memory().peak
    total = sum(g.node(v)["peak_bytes"] for v in g.nodes())
    assert total == peak["graph_bytes"] == peak["by_kind"]["saved activations"] + peak["by_kind"]["gradients"] + \
        peak["inputs_bytes"]
    doc = json.loads(g.to_json(version=1))
    assert all("peak_bytes" in n for n in doc["nodes"]) and doc["meta"]["memory"]["nodes"]
    assert "peak_bytes" in json.loads(g.to_json())["nodes"]  # version 2: a column
    g2 = gw.load_json(g.to_json())
    assert g2.memory().peak == peak
    assert [g2.node(v)["peak_bytes"] for v in g2.nodes()] == [g.node(v)["peak_bytes"] for v in g.nodes()]
    # graphs without a memory record write no peak_bytes at all
    assert "peak_bytes" not in json.loads(gw.capture(m(x)).to_json(version=1))["nodes"][0]
    assert "peak_bytes" not in json.loads(gw.capture(m(x)).to_json())["nodes"]


def test_the_views_offer_the_peak_colour_exactly_when_nodes_hold_bytes_at_the_peak(tmp_path):
    import base64
    import re

    import traitlets

    from graphwidget.views.packed import unpack
    from graphwidget.views.payload import graph_payload
    m, x = chain()
    g = gw.profile(m, x, repeat=1, warmup=0, memory=True)
    assert "peak_bytes" in graph_payload(g).metrics
    doc = json.loads(g.to_json())
    assert "peak_bytes" in graph_payload(doc).metrics and "peak_bytes" in graph_payload(g.to_json()).metrics
    # no memory record: no peak_bytes key, no peak colour (in the widget either, with what to do instead)
    for plain in (gw.profile(m, x, repeat=1, warmup=0), gw.capture(m(x))):
        assert "peak_bytes" not in graph_payload(plain).metrics
        w = gw.GraphWidget(plain)
        assert "peak_bytes" not in w.available_metrics
        with pytest.raises(traitlets.TraitError, match=r"no values for it.*memory=True"):
            w.colour_by = "peak_bytes"
    # a memory record where no node holds anything at the peak: one flat colour, so not offered
    flat = json.loads(g.to_json(version=1))
    for n in flat["nodes"]:
        n["peak_bytes"] = 0
    assert "peak_bytes" not in graph_payload(flat).metrics
    w = gw.GraphWidget(g)
    assert "peak_bytes" in w.available_metrics and w.colour_by == "bwd_ms"  # the default rule is unchanged
    w.colour_by = "peak_bytes"
    # the self-contained export carries every node's peak_bytes
    page = g.export_html(tmp_path / "peak.html").read_text()
    data = re.search(r'id="gw-graph-data"[^>]*>([^<]+)<', page).group(1)
    nodes = unpack(base64.b64decode(data))["nodes"]
    assert {n["id"]: n["peak_bytes"] for n in nodes} == {v: g.node(v)["peak_bytes"] for v in g.nodes()}


def test_a_broken_memory_record_is_refused_naming_the_field():
    m, x = chain()
    doc = json.loads(gw.profile(m, x, repeat=1, warmup=0, memory=True).to_json())
    doc["meta"]["memory"]["nodes"] = ["x"]
    with pytest.raises(gw.SchemaError, match="meta.memory.*nodes"):
        gw.load_json(json.dumps(doc))


def test_memory_on_a_graph_without_a_record_says_what_to_do():
    m, x = chain()
    with pytest.raises(ValueError, match="memory=True"):
        gw.capture(m(x)).memory()


def test_table_prints_the_peak_and_its_modules():
    m, x = chain()
    text = str(gw.profile(m, x, repeat=1, warmup=0, memory=True).memory())
    assert text.startswith("peak ") and "(allocator)" in text and "module" in text


def test_small_model_gets_no_checkpoint_finding():
    m, x = chain()
    g = gw.profile(m, x, repeat=1, warmup=0, memory=True)
    assert not [f for f in g.advise(min_share=0) if f.rule == "checkpoint-candidate"]


# -- the views -----------------------------------------------------------------------------------------------------
def test_timeline_figure_carries_node_ids_and_the_export_puts_it_beside_the_graph(tmp_path):
    pytest.importorskip("plotly")
    m, x = chain()
    g = gw.profile(m, x, repeat=1, warmup=0, memory=True)
    rep = g.memory()
    fig = rep.figure()
    ids = set(g.meta["memory"]["nodes"])
    assert all(set(tr.customdata) <= ids for tr in fig.data)
    assert fig.layout.meta["graphwidget_link"] == "node"
    html = g.export_html(tmp_path / "m.html", charts=[fig, g.figure("memory")]).read_text()
    # the linked timeline sits in the column beside the viewer, with its click script; the other chart below
    split = html[html.index('<div class="gw-split">'):html.index("</aside>")]
    assert 'class="graphwidget-root"' in split and split.count('class="plotly-graph-div"') == 1
    assert "plotly_click" in split and "root.graphwidget" in split and ".select(id)" in split
    assert html.index("</aside>") < html.index('<section class="gw-extra">') < html.rindex('class="plotly-graph-div"')
    assert html.count("<script type=\"text/javascript\">") == 1  # plotly.js once, before the first figure
    assert 'data-colour="bwd_ms"' in html  # charts= leaves the viewer's colour alone
    # the report's own export: the graph opens coloured by "alive at the peak", the timeline and the peak beside it
    page = rep.export_html(tmp_path / "peak.html").read_text()
    side = page[page.index('<aside class="gw-beside">'):page.index("</aside>")]
    assert 'data-colour="peak_bytes"' in page and "plotly_click" in side and "gw-memory-summary" in side
    assert f"#{rep.holders[0]['node']} " in side
    with pytest.raises(ValueError, match="colour='peak_bytes'.*memory=True"):
        gw.capture(m(x)).export_html(tmp_path / "no.html", colour="peak_bytes")


def test_memory_widget_puts_the_timeline_beside_the_graph_linked_both_ways():
    pytest.importorskip("plotly")
    pytest.importorskip("anywidget")
    from graphwidget.views.plotly_inline import SELECTED_LINE
    m, x = chain()
    g = gw.profile(m, x, repeat=1, warmup=0, memory=True)
    rep = g.memory()
    box = rep.widget(height=500)
    w, fw = box.children[0], box.children[1].children[0]
    assert type(w).__name__ == "GraphWidget" and type(fw).__name__ == "FigureWidget"
    assert w.colour_by == "peak_bytes" and fw.layout.height == 500
    points = g.meta["memory"]["nodes"]
    tr = fw.data[0]

    class Points:
        point_inds = [3]

    for cb in tr._click_callbacks:
        cb(tr, Points(), None)
    assert w.selected == points[3]
    # the selection (from a click or from Python) is marked at each of its node's points
    marked = [s.x0 for s in fw.layout.shapes if s.line.color == SELECTED_LINE]
    assert marked == [i for i, v in enumerate(points) if v == points[3]] and 3 in marked
    w.selected = rep.peak["node"]
    marked = [s.x0 for s in fw.layout.shapes if s.line.color == SELECTED_LINE]
    assert rep.peak["point"] in marked and all(points[i] == rep.peak["node"] for i in marked)
    w.selected = None
    assert not [s for s in fw.layout.shapes if s.line.color == SELECTED_LINE]
    with pytest.raises(ValueError, match="beside=True needs the widget"):
        rep.figure(beside=True)


@pytest.mark.slow
@pytest.mark.browser
def test_export_click_selects_the_node_and_the_selection_is_marked_on_the_timeline(tmp_path, chromium):
    pytest.importorskip("plotly")
    from graphwidget.views.plotly_inline import SELECTED_LINE
    m, x = chain()
    g = gw.profile(m, x, repeat=1, warmup=0, memory=True)
    rep = g.memory()
    path = rep.export_html(tmp_path / "m.html")
    root = "document.querySelector('.graphwidget-root')"
    plot = "document.querySelector('.gw-beside .plotly-graph-div')"
    for scheme in ("light", "dark"):
        ctx = chromium.new_context(viewport={"width": 1400, "height": 800}, color_scheme=scheme)
        page = ctx.new_page()
        page.goto(path.as_uri())
        page.wait_for_selector('[data-gw-state="ready"]', timeout=60000)
        g_box = page.eval_on_selector(".graphwidget-root", "e => e.getBoundingClientRect().toJSON()")
        p_box = page.eval_on_selector(".gw-beside .plotly-graph-div", "e => e.getBoundingClientRect().toJSON()")
        assert p_box["left"] >= g_box["right"] - 1 and p_box["top"] < g_box["bottom"]  # beside, not below
        assert page.evaluate(f"{root}.graphwidget.colour()") == "peak_bytes"
        xy = page.eval_on_selector(".gw-beside .plotly-graph-div", "d => { const p = d.querySelectorAll("
                                   "'.scatterlayer .trace:last-child .point')[0].getBoundingClientRect(); "
                                   "return [p.x + p.width / 2, p.y + p.height / 2]; }")
        page.mouse.click(*xy)
        page.wait_for_function(f"{root}.graphwidget.selected() !== null", timeout=10000)
        assert page.evaluate(f"{root}.graphwidget.selected()") == rep.peak["node"]
        # and back: the viewer's selection drawn as a line at the node's points
        page.wait_for_function(f"({plot}.layout.shapes || []).some(s => s.line && s.line.color === "
                               f"'{SELECTED_LINE}' && s.x0 === {rep.peak['point']})", timeout=10000)
        # the figure follows the page's scheme
        bg = page.evaluate(f"{plot}._fullLayout.paper_bgcolor")
        assert (bg == "#111317") == (scheme == "dark"), (scheme, bg)
        ctx.close()


# -- the diff ------------------------------------------------------------------------------------------------------
def test_compare_measures_both_peaks_and_the_report_says_so():
    m, x = chain()
    d = gw.compare(m, gw.with_checkpoint(m, ["layers.1", "layers.2"]), x, memory=True, advise=False)
    s = d.summary()["memory"]
    assert s["peak"]["measured"] and s["peak"]["a"] > 0 and s["peak"]["b"] > 0
    assert d.equivalent
    assert "memory: peak" in d.report()
    d2 = gw.load_json(d.to_json())
    assert d2.summary()["memory"]["peak"]["a"] == s["peak"]["a"]


def test_seed_repeat_vs_broadcast_peak():
    ex = gw.examples
    inp = ex.homography_inputs(batch=2, height=32, width=32)
    d = gw.compare(ex.homography_repeat, ex.homography_broadcast, **inp, memory=True, advise=False,
                   labels=("repeat", "broadcast"))
    p = d.summary()["memory"]["peak"]
    assert p["b"] < p["a"]  # the repeated tensor and its selects' full-size gradients are gone


def test_diff_of_two_memory_profiles_shows_peaks_and_modules():
    m, x = chain()
    ga = gw.profile(m, x, repeat=1, warmup=0, memory=True)
    gb = gw.profile(m, x[:64], repeat=1, warmup=0, memory=True)
    mem = gw.diff(ga, gb).summary()["memory"]
    assert mem["peak"]["b"] < mem["peak"]["a"]
    assert mem["saved_by_module"] and all(r["delta"] < 0 for r in mem["saved_by_module"])


# -- real models: the prediction holds when measured ---------------------------------------------------------------
def _check_top_candidate(model, step, min_ratio=0.7):
    g = gw.profile(step, model, repeat=1, warmup=0, memory=True, module=model)
    fs = [f for f in g.advise() if f.rule == "checkpoint-candidate"]
    assert fs, [c["label"] for c in checkpoint_candidates(g)]
    ev = fs[0].evidence
    # its evidence is the memory peak's, not the backward time of its nodes (a checkpoint's cost is the recompute)
    assert ev["share_of"] == "peak_bytes" and "share_of_backward" not in ev and ev["predicted"]
    ck = gw.with_checkpoint(model, ev["modules"])
    cpu = torch.device("cpu")
    grads = []
    peaks = []
    for mdl in (model, ck):
        model.zero_grad(set_to_none=True)
        peaks.append(step_peak(lambda mdl=mdl: step(mdl).backward(), cpu)["bytes"])
        grads.append([p.grad.clone() for p in model.parameters()])
    saved = peaks[0] - peaks[1]
    assert saved >= min_ratio * ev["saving_bytes"], (ev["label"], saved, ev["saving_bytes"])
    assert all(torch.equal(a, b) for a, b in zip(*grads))  # checkpointing recomputes the same numbers here
    # profiling with memory=True left the same gradients as a plain step
    model.zero_grad(set_to_none=True)
    gw.profile(step, model, repeat=1, warmup=0, memory=True, module=model)
    assert all(torch.equal(p.grad, r) for p, r in zip(model.parameters(), grads[0]))
    return ev, peaks


@pytest.mark.slow
def test_gpt2_top_candidate_saves_what_it_predicts():
    pytest.importorskip("transformers")
    model, ids = gpt2_small()
    ev, _ = _check_top_candidate(model, lambda mdl: mdl(input_ids=ids, labels=ids).loss)
    assert ev["modules"][0].startswith("transformer.h.")


@pytest.mark.slow
def test_resnet_top_candidate_saves_what_it_predicts():
    model = resnet()
    x = torch.randn(16, 3, 64, 64, generator=torch.Generator().manual_seed(2))
    ev, _ = _check_top_candidate(model, lambda mdl: mdl(x).sum())
    assert ev["modules"][0].startswith(("layers", "stem"))


# -- CUDA ----------------------------------------------------------------------------------------------------------
CUDA_REASON = "no CUDA device here: the caching allocator's path (max_memory_allocated, CUDA memory events) is untested"


@pytest.mark.skipif(not torch.cuda.is_available(), reason=CUDA_REASON)
def test_cuda_path_uses_the_caching_allocator():
    m, x = chain()
    m, x = m.cuda(), x.cuda()
    g = gw.profile(m, x, repeat=1, warmup=0, memory=True)
    mem = g.meta["memory"]
    assert mem["device"].startswith("cuda") and "CUDA caching allocator" in mem["allocator"]
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    m(x).backward()
    torch.cuda.synchronize()
    ref = torch.cuda.max_memory_allocated() - base
    peak = g.memory().peak["bytes"]
    assert abs(peak - ref) <= 0.1 * ref, (peak, ref)
    assert abs(mem["allocator_peak"] - ref) <= 0.1 * ref


def test_readme_memory_block_runs(tmp_path, monkeypatch):
    import re
    from pathlib import Path
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    start = readme.index("## Memory: where the peak is")
    block = re.search(r"```python\n(.*?)```", readme[start:], flags=re.S).group(1)
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    exec(block, ns)
    assert ns["m"].peak["source"] == "allocator" and ns["c"]["saving_bytes"] > 0
    assert (tmp_path / "memory.html").exists() and "memory: peak" in ns["d"].report()


def test_inside_a_running_profiler_memory_true_refuses_and_leaves_it_running():
    import gc

    from torch.profiler import profile
    m, x = chain()
    gc_was = gc.isenabled()
    with profile():
        with pytest.raises(RuntimeError, match="profiler is already running"):
            gw.profile(m, x, repeat=1, memory=True)
        assert torch._C._autograd._profiler_enabled()  # the user's session goes on
    assert gc.isenabled() == gc_was and all(p.grad is None for p in m.parameters())
