"""The house: one schema everywhere, a small public surface, saved graphs usable without torch, views that fail
clearly (never at import), widgets that refuse typos."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from no_torch import BLOCK_TORCH

import graphwidget as gw
from graphwidget.model import schema

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "graphwidget"


def _ts_array(name: str) -> list:
    text = (ROOT / "js" / "src" / "schema" / "types.ts").read_text()
    m = re.search(rf"export const {name} = \[(.*?)\] as const;", text, re.S)
    assert m, f"{name} not found in js/src/schema/types.ts"
    return re.findall(r'"([^"]+)"', m.group(1))


def _cpp_keys() -> set:
    text = (PKG / "capturing" / "native" / "cpp" / "common.h").read_text()
    m = re.search(r"#define GW_KEYS\(X\)(.*?)\n#define", text, re.S)
    assert m, "GW_KEYS not found in capturing/native/cpp/common.h"
    return set(re.findall(r"X\((\w+)\)", m.group(1)))


# -- one schema ----------------------------------------------------------------------------------------------------
def test_front_end_types_use_the_schema_keys_in_order():
    assert tuple(_ts_array("NODE_KEYS")) == schema.NODE_KEYS
    assert tuple(_ts_array("EDGE_KEYS")) == schema.EDGE_KEYS


def test_front_end_colour_menu_is_the_python_one():
    """The metrics Python offers (views/payload.py COLOUR_METRICS) are the viewer's menu (js/src/model/colour.ts
    METRIC_ORDER), in the same order: a metric one side lacks cannot be chosen or cannot be drawn."""
    from graphwidget.views.payload import COLOUR_METRICS
    text = (ROOT / "js" / "src" / "model" / "colour.ts").read_text()
    m = re.search(r"export const METRIC_ORDER: MetricName\[\] = \[(.*?)\];", text, re.S)
    assert m, "METRIC_ORDER not found in js/src/model/colour.ts"
    assert tuple(re.findall(r'"([^"]+)"', m.group(1))) == COLOUR_METRICS


def test_compiled_core_writes_only_schema_keys():
    internal = {"variable", "saved_tensors", "_storage_key"}  # read from torch / dropped before a record leaves
    written = _cpp_keys() - internal
    known = set(schema.NODE_KEYS) | set(schema.EDGE_KEYS) | set(schema.SAVED_KEYS) | set(schema.LEAF_KEYS)
    assert written <= known, f"keys in common.h that the schema does not define: {sorted(written - known)}"
    # every edge and saved-tensor key is written by the core (it builds those records itself)
    assert set(schema.EDGE_KEYS) <= written and set(schema.SAVED_KEYS) <= written


def test_docs_describe_every_node_and_edge_key():
    doc = (ROOT / "docs" / "schema.md").read_text()
    for key in schema.NODE_KEYS + schema.OPTIONAL_NODE_KEYS + schema.EDGE_KEYS:
        assert f'"{key}"' in doc, f"docs/schema.md does not describe {key!r}"
    assert f'"version": {schema.VERSION}' in doc


def test_capture_records_carry_exactly_the_schema_keys():
    x = torch.randn(3, requires_grad=True)
    for engine in ("python", "auto"):
        g = gw.capture((x.exp() * x).sum(), engine=engine)
        for _, d in g.nx.nodes(data=True):
            assert tuple(d) == schema.NODE_KEYS
        for _, _, e in g.nx.edges(data=True):
            assert tuple(e) == schema.EDGE_KEYS


def test_one_validator_for_every_reader():
    # load_json and the views refuse the same broken document with the same words.
    x = torch.randn(3, requires_grad=True)
    doc = gw.capture((x * 2).sum()).to_dict()
    doc["version"] = 99
    with pytest.raises(ValueError, match="version 99 is not supported.*upgrade graphwidget"):
        gw.load_json(json.dumps(doc))
    from graphwidget.views.payload import graph_payload
    with pytest.raises(ValueError, match="version 99 is not supported.*upgrade graphwidget"):
        graph_payload(doc)


def test_unknown_node_keys_are_dropped_with_one_warning():
    x = torch.randn(3, requires_grad=True)
    doc = gw.capture((x * 2).sum()).to_dict(version=1)
    for n in doc["nodes"]:
        n["from_the_future"] = 1
    columns = gw.capture((x * 2).sum()).to_dict()  # version 2: a column the release does not know
    columns["nodes"]["from_the_future"] = {"const": 1}
    for d in (doc, columns):
        with pytest.warns(UserWarning, match="from_the_future") as rec:
            g = gw.load_json(json.dumps(d))
        assert len(rec) == 1 and "from_the_future" not in g.node(0)


# -- the public surface --------------------------------------------------------------------------------------------
def test_public_surface_is_small_and_resolves():
    for name in gw.__all__:
        assert getattr(gw, name) is not None, name
    assert callable(gw.capture) and callable(gw.profile) and callable(gw.trace)
    # no stage package is named like a public function, so importing a stage's module never rebinds a function and
    # every module is reachable as an attribute (gw.capturing.native, not a shadowed gw.capture.native)
    import graphwidget.capturing.native.builder  # noqa: F401
    import graphwidget.profiling.hooks  # noqa: F401
    assert callable(gw.capture) and callable(gw.profile)
    assert callable(gw.capturing.native.build) and gw.profiling.hooks.instrument
    public_modules = {n for n in dir(gw) if not n.startswith("_") and type(getattr(gw, n)).__name__ == "module"}
    stages = {"model", "capturing", "attribution", "profiling", "experiment", "analysis", "views", "examples",
              "entry"}
    assert public_modules <= stages, public_modules - stages


def _run(code: str, *, cwd: Path, env_extra: dict = None, timeout: int = 240) -> subprocess.CompletedProcess:
    import os
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_saved_graphs_load_summarise_and_diff_without_torch(tmp_path):
    x = torch.randn(4, requires_grad=True)
    g = gw.profile(lambda: (x.exp() * x).sum(), repeat=2)
    (tmp_path / "g.json").write_text(g.to_json())
    proc = _run(BLOCK_TORCH + textwrap.dedent(f"""
        import graphwidget as gw
        g = gw.load_json(open({str(tmp_path / 'g.json')!r}).read())
        s = g.summary()
        assert s["nodes"] == {len(g)} and s["backward_ms"] > 0, s
        print(g.timing_table(top=2))
        print(repr(g))
        try:
            gw.capture
        except ImportError as exc:
            print("capture:", exc)
        assert "torch" not in sys.modules
        print("OK")
    """), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "OK" in proc.stdout and "capture: graphwidget.capture needs PyTorch" in proc.stdout


def test_missing_bundle_is_a_clear_error_at_use_not_at_import(tmp_path):
    # A real package copy without static/ (what a source checkout that was never built looks like).
    shutil.copytree(PKG, tmp_path / "graphwidget", ignore=shutil.ignore_patterns("static", "build", "__pycache__"))
    proc = _run("""
        import torch, graphwidget as gw
        from graphwidget.views.assets import BundleMissingError
        x = torch.randn(3, requires_grad=True)
        g = gw.capture((x * 2).sum())
        for make in (lambda: gw.GraphWidget(g), lambda: gw.export_html(g, "x.html")):
            try:
                make()
            except BundleMissingError as exc:
                assert "make setup" in str(exc), exc
                print("clear:", type(exc).__name__)
        data = g._repr_mimebundle_()
        assert data["text/plain"].startswith("<GradGraph: 3 nodes"), data["text/plain"]
        assert "interactive view unavailable" in data["text/plain"] and "<table>" in data["text/html"]
        assert "application/vnd.jupyter.widget-view+json" not in data
        print("OK", gw.__file__)
    """, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("clear: BundleMissingError") == 2
    assert f"OK {tmp_path}" in proc.stdout  # the copy was the package imported
    assert "Traceback" not in proc.stderr


# -- widgets -------------------------------------------------------------------------------------------------------
@pytest.fixture
def graph():
    x = torch.randn(3, requires_grad=True)
    return gw.capture((x.exp() * x).sum(), title="t")


def test_widget_refuses_unknown_keyword_arguments(graph):
    with pytest.raises(TypeError, match="unexpected keyword argument.*colur_by.*colour_by"):
        gw.GraphWidget(graph, colur_by="saved_bytes")
    w = gw.GraphWidget(graph, height=300, colour_by="saved_bytes")
    assert (w.height, w.colour_by) == (300, "saved_bytes")


def test_colour_by_is_an_enum_of_what_the_graph_has(graph):
    import traitlets
    w = gw.GraphWidget(graph)
    assert w.colour_by == "grad_bytes"  # untimed graph with gradient sizes: the default rule
    assert "bwd_ms" not in w.available_metrics
    with pytest.raises(traitlets.TraitError, match="no values for it; available: grad_bytes, saved_bytes"):
        w.colour_by = "bwd_ms"
    with pytest.raises(traitlets.TraitError):
        w.colour_by = "purple"
    timed = gw.profile(lambda: graph_input().exp().sum(), repeat=1)
    w.set_graph(timed)
    w.colour_by = "bwd_ms"
    w.set_graph(graph)  # a stale metric does not survive a graph that lacks it
    assert w.colour_by == "grad_bytes"


def graph_input():
    return torch.randn(5, requires_grad=True)


def test_rich_display_has_a_summary_line_and_a_static_fallback(graph):
    data = graph._repr_mimebundle_()
    assert data["text/plain"] == repr(graph) == "<GradGraph 't': 4 nodes, 4 edges, saved 24 B>"
    assert "application/vnd.jupyter.widget-view+json" in data
    assert "ExpBackward0" in data["text/html"] and "graphwidget: t" in data["text/html"]
    w = gw.GraphWidget(graph)
    assert repr(w) == "GraphWidget 't': 4 nodes, 4 edges, saved 24 B"


def test_static_fallback_escapes_graph_strings():
    x = torch.randn(3, requires_grad=True)
    g = gw.capture((x * 2).sum(), title="<script>alert(1)</script>")
    html = g._repr_mimebundle_()["text/html"]
    assert "<script>" not in html and "&lt;script&gt;" in html


OLDEST_ANYWIDGET = ROOT / ".venv" / "anywidget-oldest"


@pytest.mark.slow  # two subprocesses importing torch and anywidget: ~4 s
@pytest.mark.skipif(not OLDEST_ANYWIDGET.is_dir(), reason="the oldest supported anywidget is installed by `make setup` "
                    "into .venv/anywidget-oldest")
def test_widget_on_the_oldest_and_newest_anywidget():
    import anywidget
    code = """
        import anywidget, torch, graphwidget as gw
        x = torch.randn(3, requires_grad=True)
        g = gw.capture((x * 2).sum())
        w = gw.GraphWidget(g, height=300)
        assert w._esm.startswith(("var ", "import", "function", "(", "const", "let", '"use strict"')), w._esm[:40]
        data = g._repr_mimebundle_()
        assert "application/vnd.jupyter.widget-view+json" in data and data["text/plain"].startswith("<GradGraph")
        w.close()
        print(anywidget.__version__)
    """
    old = _run(code, cwd=ROOT, env_extra={"PYTHONPATH": str(OLDEST_ANYWIDGET)})
    new = _run(code, cwd=ROOT)
    assert old.returncode == 0 and new.returncode == 0, old.stderr + new.stderr
    assert old.stdout.strip() == "0.9.0" and new.stdout.strip() == anywidget.__version__
