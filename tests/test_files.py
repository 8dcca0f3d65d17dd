"""Files people share: hostile or broken graph JSON is refused with a clear ValueError naming the node and the field;
exported plotly charts never turn names from a graph into markup.

Before (issue 10): ``load_json`` accepted graphs that broke later (nodes without ``op``, wrong types in ``saved`` or
``timing``, cycles, self-loops, duplicate ids merged silently, NaN that made ``to_json``/export fail, deep nesting
raising a bare ``RecursionError``), and op names / source paths could plant real ``<a href>`` links in exported charts.
"""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any, Callable, Dict

import pytest
import torch

import graphwidget as gw

HOSTILE_LINK = '<a href="http://x">x</a>'


@pytest.fixture(scope="module")
def doc() -> Dict[str, Any]:
    """A real profiled graph as parsed JSON: nodes with saved tensors, timing, sources and modules."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 3)
    x = torch.randn(2, 3, requires_grad=True)
    g = gw.profile(lambda m, t: (m(t).exp() * t).sum(), lin, x, repeat=1, warmup=0)
    return json.loads(g.to_json())


def node_with(d: Dict[str, Any], pred: Callable[[Dict[str, Any]], bool]) -> Dict[str, Any]:
    return next(n for n in d["nodes"] if pred(n))


def refused(d: Any) -> str:
    text = d if isinstance(d, str) else json.dumps(d)
    with pytest.raises(ValueError) as info:
        gw.load_json(text)
    assert not isinstance(info.value, RecursionError)
    return str(info.value)


def test_the_untouched_file_loads(doc: Dict[str, Any]) -> None:
    g = gw.load_json(json.dumps(doc))
    assert len(g) == len(doc["nodes"])


def test_node_without_op(doc: Dict[str, Any]) -> None:
    d = copy.deepcopy(doc)
    n = node_with(d, lambda n: n["kind"] == "backward")
    del n["op"]
    msg = refused(d)
    assert '"op"' in msg and f"node {n['id']}" in msg
    n["op"] = 7
    msg = refused(d)
    assert '"op"' in msg and f"node {n['id']}" in msg


@pytest.mark.parametrize("field, value", [
    ("saved", "not a list"),
    ("saved", [["not", "an", "object"]]),
    ("saved.0.bytes", "12"),
    ("saved.0.bytes", -1),
    ("saved.0.shape", [2, "3"]),
    ("saved.0.stride", {"0": 1}),
    ("saved.0.storage", 1.5),
    ("saved_bytes", "lots"),
    ("fwd_ms", "fast"),
    ("bwd_ms", -1.0),
    ("outputs", {"shape": [1]}),
    ("tensor", [1, 2]),
    ("source", ["a.py", 1]),
])
def test_wrong_types_in_a_node(doc: Dict[str, Any], field: str, value: Any) -> None:
    d = copy.deepcopy(doc)
    n = node_with(d, lambda n: bool(n.get("saved")))
    parts = field.split(".")
    target: Any = n
    for p in parts[:-1]:
        target = target[int(p)] if p.isdigit() else target[p]
    last = parts[-1]
    target[int(last) if last.isdigit() else last] = value
    msg = refused(d)
    assert f"node {n['id']}" in msg, msg
    assert parts[0] in msg and parts[-1] in msg, msg


@pytest.mark.parametrize("timing, key", [
    ("fast", "meta.timing"),
    ({"forward_ms": "1.0"}, "meta.timing.forward_ms"),
    ({"backward_ms": [1]}, "meta.timing.backward_ms"),
    ({"unattributed_ms": True}, "meta.timing.unattributed_ms"),
    ({"repeat": "5"}, "meta.timing.repeat"),
    ({"warmup": -1}, "meta.timing.warmup"),
])
def test_wrong_types_in_meta_timing(doc: Dict[str, Any], timing: Any, key: str) -> None:
    d = copy.deepcopy(doc)
    d["meta"]["timing"] = timing if not isinstance(timing, dict) else {**d["meta"]["timing"], **timing}
    msg = refused(d)
    assert key in msg, msg


def test_cycle(doc: Dict[str, Any]) -> None:
    d = copy.deepcopy(doc)
    e = d["edges"][0]
    d["edges"].append({"source": e["target"], "target": e["source"]})
    msg = refused(d)
    assert "cycle" in msg and str(e["source"]) in msg and str(e["target"]) in msg


def test_self_loop(doc: Dict[str, Any]) -> None:
    d = copy.deepcopy(doc)
    nid = d["nodes"][1]["id"]
    d["edges"].append({"source": nid, "target": nid})
    msg = refused(d)
    assert "self-loop" in msg and f"node {nid}" in msg


def test_duplicate_ids_are_not_merged(doc: Dict[str, Any]) -> None:
    d = copy.deepcopy(doc)
    d["nodes"][2]["id"] = d["nodes"][1]["id"]
    msg = refused(d)
    assert f"id {d['nodes'][1]['id']}" in msg and "twice" in msg and "nodes[2]" in msg


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_nan_and_infinity_name_the_field_and_node(doc: Dict[str, Any], literal: str) -> None:
    d = copy.deepcopy(doc)
    n = node_with(d, lambda n: n.get("fwd_ms") is not None)
    n["fwd_ms"] = "@@"
    text = json.dumps(d).replace('"@@"', literal)
    msg = refused(text)
    assert "fwd_ms" in msg and f"node {n['id']}" in msg, msg
    assert "null" in msg  # says what to write instead


def test_nan_inside_attrs_and_meta(doc: Dict[str, Any]) -> None:
    d = copy.deepcopy(doc)
    n = d["nodes"][0]
    n["attrs"] = {"alpha": "@@"}
    msg = refused(json.dumps(d).replace('"@@"', "NaN"))
    assert "attrs.alpha" in msg and f"node {n['id']}" in msg, msg
    d = copy.deepcopy(doc)
    d["meta"]["timing"]["forward_ms"] = "@@"
    msg = refused(json.dumps(d).replace('"@@"', "Infinity"))
    assert "meta.timing.forward_ms" in msg, msg


@pytest.mark.parametrize("depth", [100, 100_000])
def test_deep_nesting_is_a_clear_error(doc: Dict[str, Any], depth: int) -> None:
    """Deeper than any graph (64 levels): refused, naming where; deeper than Python's own recursion limit too (the
    JSON reader would raise a bare RecursionError)."""
    d = copy.deepcopy(doc)
    n = d["nodes"][1]
    n["attrs"] = {"deep": "@@"}
    text = json.dumps(d).replace('"@@"', "[" * depth + "]" * depth)
    msg = refused(text)
    assert "nested" in msg and "attrs" in msg and "nodes[1]" in msg, msg
    assert len(msg) < 300, "the message names the place, it does not print the whole path"


def test_every_refusal_is_a_value_error_not_a_crash_later(doc: Dict[str, Any]) -> None:
    """What passes validation exports and re-serialises: a round trip of the loaded graph works."""
    g = gw.load_json(json.dumps(doc))
    assert json.loads(g.to_json())["nodes"] == json.loads(json.dumps(doc))["nodes"]


# -- exported charts ------------------------------------------------------------------------------------------------
def hostile_graph() -> Any:
    """A profiled graph whose op, source, code and module strings carry markup."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 3)
    x = torch.randn(2, 3, requires_grad=True)
    g = gw.profile(lambda m, t: (m(t).exp() * t).sum(), lin, x, repeat=1, warmup=0)
    for i, (_, d) in enumerate(g.nx.nodes(data=True)):
        d["op"] = f"{HOSTILE_LINK}<b>Op{i}</b>"
        d["source"] = f"/home/{HOSTILE_LINK}/<b>m.py</b>:{i + 1}"
        d["code"] = f"y = {HOSTILE_LINK}"
        d["module"] = f"enc.{HOSTILE_LINK}.<b>layer</b>{i % 2}"
    return g


def plotly_json_strings(html: str) -> list:
    """Every string inside the Plotly.newPlot(...) calls of an exported page."""
    out = []
    for m in re.finditer(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*(\[.*?\]),\s*(\{.*?\})[,)]", html, re.S):
        for part in m.groups():
            out.extend(re.findall(r'"((?:[^"\\]|\\.)*)"', part))
    return out


def test_chart_labels_are_escaped_in_the_figures() -> None:
    pytest.importorskip("plotly")
    from graphwidget.views import charts

    g = hostile_graph()
    for kind in ("time", "memory"):
        fig = charts.figure(g, kind)
        text = json.dumps(fig.to_plotly_json())
        assert "<a href" not in text and "<b>" not in text, kind
        assert "&lt;a href" in text  # escaped, still readable


def test_exported_html_has_no_planted_link(tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    from graphwidget.views import charts
    from graphwidget.views.export import export_html

    g = hostile_graph()
    path = export_html(g, tmp_path / "hostile.html", charts=[charts.figure(g, "time"), charts.figure(g, "memory")])
    html = Path(path).read_text(encoding="utf-8")
    strings = plotly_json_strings(html)
    assert strings, "no plotly figure found in the export"
    planted = [s for s in strings if re.search(r"<a\s+href|\\u003ca\s+href|<b>|\\u003cb\\u003e", s, re.I)]
    assert not planted, planted[:3]
