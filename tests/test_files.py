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
from typing import Any, Callable, Dict, List, Tuple

import pytest
import torch

import graphwidget as gw

HOSTILE_LINK = '<a href="http://x">x</a>'


def profiled_doc() -> Dict[str, Any]:
    """A real profiled graph as parsed JSON: nodes with saved tensors, leaves, timing, sources and modules. Written
    in version 1 (one record per node and per edge, the old writer's path), which this release still reads and
    validates: the tests below mutate single records; tests/test_format.py checks version 2 (columns) refuses the
    same mutations with the same words."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 3)
    x = torch.randn(2, 3, requires_grad=True)
    g = gw.profile(lambda m, t: (m(t).exp() * t).sum(), lin, x, repeat=1, warmup=0)
    return json.loads(g.to_json(version=1))


@pytest.fixture(scope="module")
def doc() -> Dict[str, Any]:
    return profiled_doc()


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


def set_path(obj: Any, path: str, value: Any) -> None:
    """``set_path(node, "saved.0.dtype", 7)``: list indices as numbers."""
    parts = path.split(".")
    for p in parts[:-1]:
        obj = obj[int(p)] if p.isdigit() else obj[p]
    obj[int(parts[-1]) if parts[-1].isdigit() else parts[-1]] = value


# Each was read by load_json before, and then the viewer could not draw it ("e.startsWith is not a function" for a
# dtype that is not a string) or showed nonsense: (which node, field, wrong value, what the message must offer).
@pytest.mark.parametrize("which, field, value, expected", [
    ("saved", "outputs.0.dtype", 7, "a string"),
    ("saved", "outputs.0.device", ["cpu"], "a string"),
    ("saved", "outputs.0", "2x3", "an output record"),
    ("saved", "saved.0.dtype", {"name": "float32"}, "a string"),
    ("saved", "saved.0.name", ["self"], "a string"),
    ("saved", "saved.0.device", 0, "a string"),
    ("saved", "saved.0.contiguous", "yes", "true or false"),
    ("saved", "saved.0.memory_format", 1, "a string"),
    ("saved", "saved.0.freed", 0, "true or false"),
    ("leaf", "tensor.dtype", 32, "a string"),
    ("leaf", "tensor.name", ["fc", "weight"], "a string"),
    ("leaf", "tensor.stride", "3,1", "a list of non-negative integers"),
    ("leaf", "tensor.stride", 1, "a list of non-negative integers"),
    ("leaf", "tensor.device", {"type": "cpu"}, "a string"),
    ("leaf", "tensor.requires_grad", "true", "true or false"),
    ("leaf", "tensor.bytes", "12", "a non-negative integer"),
    ("saved", "out_stride", [3, 1], "a list of non-negative integers"),
    ("saved", "out_stride", [[3, "1"]], "a list of non-negative integers"),
    ("saved", "out_contiguous", ["yes"], "true or false"),
])
def test_every_field_has_its_documented_type(doc: Dict[str, Any], which: str, field: str, value: Any,
                                             expected: str) -> None:
    d = copy.deepcopy(doc)
    n = node_with(d, (lambda n: bool(n.get("saved"))) if which == "saved" else (lambda n: n["kind"] == "leaf"))
    set_path(n, field, value)
    msg = refused(d)
    assert f"node {n['id']}" in msg, msg
    head, last = field.split(".")[0], field.split(".")[-1]
    assert head in msg and (last.isdigit() or last in msg), msg
    assert expected in msg, f"the message says what to write instead: {msg}"


@pytest.mark.parametrize("field, value, expected", [
    ("dtype", 7, "a string"),
    ("shape", "2x3", "a list of non-negative integers"),
    ("output", "0", "a non-negative integer"),
    ("slot", -1, "a non-negative integer"),
    ("also", {"slot": 1}, "a connection record"),
    ("also", [{"output": 0, "slot": 1, "shape": [2, 3], "dtype": 7}], "a string"),
])
def test_every_edge_field_has_its_documented_type(doc: Dict[str, Any], field: str, value: Any, expected: str) -> None:
    d = copy.deepcopy(doc)
    e = d["edges"][0]
    e[field] = value
    msg = refused(d)
    assert f"edges[0] ({e['source']} -> {e['target']})" in msg and field in msg and expected in msg, msg


@pytest.mark.parametrize("field, value, expected", [
    ("title", ["a", "title"], "a string"),
    ("torch", 2.13, "a string"),
    ("traced", "yes", "true or false"),
    ("timed", 1, "true or false"),
    ("roots", [0, "1"], "a list of node ids"),
])
def test_every_meta_field_has_its_documented_type(doc: Dict[str, Any], field: str, value: Any, expected: str) -> None:
    d = copy.deepcopy(doc)
    d["meta"][field] = value
    msg = refused(d)
    assert f"meta.{field}" in msg and expected in msg, msg


# Values of every JSON type (and numbers at the edges) put into every field: what load_json accepts of these must be
# drawable (tests/browser/test_hostile_export.py renders them in Chromium).
VALUE_ZOO = (None, 0, -1, 2.5, 2**53 + 1, "", "x", "float32", True, [], [1], ["x"], [[1]], {}, {"x": 1})


def mutation_base(doc: Dict[str, Any]) -> Dict[str, Any]:
    """``doc`` with an edge that carries a second connection (``also``) and one advisor finding, so that those
    fields are mutated too."""
    d = copy.deepcopy(doc)
    e = d["edges"][0]
    e["also"] = [{"output": 0, "slot": 1, "shape": e["shape"], "dtype": e["dtype"]}]
    mul = node_with(d, lambda n: bool(n.get("saved")))
    d["findings"] = [{"rule": "dtype-upcast", "severity": "info", "nodes": [mul["id"]], "source": "m.py:1",
                      "code": "y = x * w", "module": None, "message": "a message", "suggestion": "y = x",
                      "evidence": {"bytes": 24, "share": 0.5, "share_of": "grad_bytes"}}]
    return d


def mutation_paths(d: Dict[str, Any]) -> List[Tuple[str, int]]:
    """(path into the document, the node it touches, or -1) for every field of a saved-tensor node, a leaf, an edge
    (and its ``also``), ``meta`` and a finding."""
    from graphwidget.model import schema

    i_mul = next(i for i, n in enumerate(d["nodes"]) if n.get("saved"))
    i_leaf = next(i for i, n in enumerate(d["nodes"]) if n["kind"] == "leaf" and n["tensor"])
    mul, leaf = d["nodes"][i_mul]["id"], d["nodes"][i_leaf]["id"]
    paths = [(f"nodes.{i_mul}.{k}", mul) for k in schema.NODE_KEYS if k != "op"]
    paths += [(f"nodes.{i_mul}.saved.0.{k}", mul) for k in schema.SAVED_KEYS]
    paths += [(f"nodes.{i_mul}.outputs.0.{k}", mul) for k in ("shape", "dtype", "device")]
    paths += [(f"nodes.{i_mul}.{k}", mul) for k in ("outputs.0", "saved.0", "attrs.x", "out_stride.0")]
    paths += [(f"nodes.{i_leaf}.tensor.{k}", leaf) for k in schema.LEAF_KEYS]
    paths += [(f"edges.0.{k}", d["edges"][0]["target"]) for k in schema.EDGE_KEYS]
    paths += [(f"edges.0.also.0.{k}", d["edges"][0]["target"]) for k in ("output", "slot", "shape", "dtype")]
    paths += [(f"meta.{k}", -1) for k in ("torch", "title", "traced", "timed", "timing.forward_ms",
                                          "timing.repeat", "timing.device", "timing.cross_check")]
    paths += [(f"findings.0.{k}", mul) for k in schema.FINDING_KEYS if k not in ("rule", "message")]
    return paths


def accepted_mutations(doc: Dict[str, Any]) -> Dict[str, List[Tuple[str, Any]]]:
    """Path -> the values of :data:`VALUE_ZOO` that ``gw.load_json`` accepts there (the rest it refuses with a
    ValueError: anything else fails the caller)."""
    base = mutation_base(doc)
    out: Dict[str, List[Tuple[str, Any]]] = {}
    for path, _ in mutation_paths(base):
        for value in VALUE_ZOO:
            d = copy.deepcopy(base)
            set_path(d, path, value)
            try:
                gw.load_json(json.dumps(d))
            except ValueError:
                continue
            out.setdefault(path, []).append(value)
    return out


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
    assert json.loads(g.to_json(version=1))["nodes"] == json.loads(json.dumps(doc))["nodes"]


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


# -- what Python itself would raise: OverflowError, TypeError, UnicodeDecodeError -----------------------------------
def schema_error(d: Any) -> str:
    """The message of the :class:`graphwidget.SchemaError` (a ValueError) load_json raises for ``d``: never
    OverflowError, TypeError, UnicodeDecodeError or another ValueError from deep inside."""
    text = d if isinstance(d, (str, bytes)) else json.dumps(d)
    with pytest.raises(gw.SchemaError) as info:
        gw.load_json(text)
    assert type(info.value) is gw.SchemaError, type(info.value)
    return str(info.value)


def test_a_400_digit_number_is_refused_not_an_overflow_error(doc: Dict[str, Any]) -> None:
    d = copy.deepcopy(doc)
    n = node_with(d, lambda n: n.get("fwd_ms") is not None)
    n["fwd_ms"] = "@@"
    msg = schema_error(json.dumps(d).replace('"@@"', "1" + "0" * 400))
    assert f"node {n['id']}" in msg and "fwd_ms" in msg and "finite" in msg and "401 digits" in msg, msg
    n["fwd_ms"], n["attrs"] = None, {"alpha": "@@"}
    msg = schema_error(json.dumps(d).replace('"@@"', "-" + "9" * 400))
    assert f"node {n['id']}" in msg and "attrs.alpha" in msg and "write null" in msg, msg
    msg = schema_error(json.dumps(d).replace('"@@"', "9" * 5000))  # past Python's own limit on digits
    assert "thousands of digits" in msg and "write null" in msg, msg


@pytest.mark.parametrize("place", ["id", "edge", "root", "finding", "saved_bytes"])
@pytest.mark.parametrize("value", [2**53, 10**30, [1], {"id": 1}])
def test_ids_that_are_huge_or_unhashable_are_refused(doc: Dict[str, Any], place: str, value: Any) -> None:
    """An id the viewer cannot hold exactly (JavaScript numbers: 2**53 and 2**53 + 1 are the same) or that is not a
    number at all; sizes likewise."""
    d = copy.deepcopy(doc)
    n = d["nodes"][1]
    if place == "id":
        n["id"] = value
    elif place == "edge":
        d["edges"][0]["source"] = value
    elif place == "root":
        d["meta"]["roots"] = [value]
    elif place == "finding":
        d["findings"] = [{"rule": "r", "severity": "info", "nodes": [value], "message": "m"}]
    else:
        n["saved_bytes"] = value
    msg = schema_error(d)
    words = {"id": '"id" must be a non-negative integer', "edge": '"source" and "target" must be node ids',
             "root": "meta.roots must be a list of node ids", "finding": '"nodes" must be a list of node ids',
             "saved_bytes": '"saved_bytes" must be a non-negative integer'}[place]
    assert words in msg, msg
    if place == "id" and isinstance(value, int):
        assert "2**53 - 1" in msg, msg


def test_non_utf8_bytes_are_refused_saying_what_to_do(doc: Dict[str, Any]) -> None:
    text = json.dumps(doc)
    assert len(gw.load_json(text.encode("utf-8"))) == len(doc["nodes"])  # bytes are read, as UTF-8
    assert len(gw.load_json(b"\xef\xbb\xbf" + text.encode("utf-8"))) == len(doc["nodes"])  # with a BOM too
    d = copy.deepcopy(doc)
    d["meta"]["title"] = "caf\u00e9"
    latin1 = json.dumps(d, ensure_ascii=False).encode("latin-1")
    msg = schema_error(latin1)
    assert "not UTF-8" in msg and f"byte {latin1.index(b'caf') + 3}" in msg and "e9" in msg and "UTF-8 JSON" in msg
    msg = schema_error(text.encode("utf-16"))
    assert "not UTF-8" in msg and "UTF-16" in msg, msg
    msg = schema_error(text.encode("utf-8") + b"\xff")
    assert "not UTF-8" in msg and "ff" in msg, msg


@pytest.mark.parametrize("field", ["op", "source", "code", "module", "kind"])
@pytest.mark.parametrize("word", ["NaN", "Infinity", "-Infinity", "nan", "inf", "1e999"])
def test_nan_like_strings_are_strings(doc: Dict[str, Any], field: str, word: str) -> None:
    """A string that spells a number is text where the schema wants text (an op may be called "NaN")..."""
    d = copy.deepcopy(doc)
    n = d["nodes"][1]
    n[field] = word
    g = gw.load_json(json.dumps(d))
    assert g.node(n["id"])[field] == word
    assert json.loads(g.to_json(version=1))["nodes"][1][field] == word


@pytest.mark.parametrize("field", ["fwd_ms", "bwd_ms", "saved_bytes", "seq", "saved.0.bytes", "tensor.bytes"])
@pytest.mark.parametrize("word", ["NaN", "Infinity", "1e999", "0x10", " 1"])
def test_nan_like_strings_are_not_numbers(doc: Dict[str, Any], field: str, word: str) -> None:
    """... and is refused where the schema wants a number, saying which number to write."""
    d = copy.deepcopy(doc)
    n = node_with(d, (lambda n: n["kind"] == "leaf") if field.startswith("tensor") else lambda n: bool(n["saved"]))
    set_path(n, field, word)
    msg = schema_error(d)
    assert f"node {n['id']}" in msg and field.split(".")[-1] in msg and "must be a" in msg and "or null" in msg
    assert f"string {word!r}" in msg, msg


@pytest.mark.parametrize("make", [
    lambda k: "[" * k + "]" * k,
    lambda k: '{"a":' * k + "1" + "}" * k,
    lambda k: '[{"a":' * k + "1" + "}]" * k,
], ids=["lists", "objects", "mixed"])
@pytest.mark.parametrize("depth", [70, 800, 100_000])
def test_deep_values_anywhere_are_a_clear_error(doc: Dict[str, Any], make: Any, depth: int) -> None:
    """Nested past 64 levels in attrs, in an unknown node key, in meta.timing.cross_check, in a finding's evidence:
    refused naming where, never a RecursionError (the JSON reader's own limit is ~1000 levels)."""
    for where in ("attrs", "unknown", "cross_check", "evidence"):
        d = copy.deepcopy(doc)
        n = d["nodes"][1]
        if where == "attrs":
            n["attrs"] = {"deep": "@@"}
        elif where == "unknown":
            n["future_key"] = "@@"
        elif where == "cross_check":
            d["meta"]["timing"]["cross_check"] = {"deep": "@@"}
        else:
            d["findings"] = [{"rule": "r", "severity": "info", "nodes": [n["id"]], "message": "m",
                              "evidence": {"deep": "@@"}}]
        msg = schema_error(json.dumps(d).replace('"@@"', make(depth)))
        assert "nested" in msg and len(msg) < 300, msg
        if depth < 1000:  # parsed, then found by the schema: the exact place
            assert {"attrs": "attrs.deep", "unknown": "future_key", "cross_check": "meta.timing.cross_check",
                    "evidence": "findings[0].evidence"}[where] in msg, msg


def test_values_nested_within_the_limit_load_and_round_trip(doc: Dict[str, Any]) -> None:
    d = copy.deepcopy(doc)
    d["nodes"][1]["attrs"] = {"deep": "@@"}
    g = gw.load_json(json.dumps(d).replace('"@@"', '{"a":[' * 30 + "1" + "]}" * 30))
    assert json.loads(g.to_json(version=1))["nodes"][1]["attrs"] == json.loads(json.dumps(d).replace(
        '"@@"', '{"a":[' * 30 + "1" + "]}" * 30))["nodes"][1]["attrs"]


def test_every_text_plotly_draws_is_escaped_once() -> None:
    """Not only trace data and names: the title, axis titles, tick labels, annotations (subplot titles), the legend
    title, a colour bar's title; escaping again changes nothing, and a title set afterwards is escaped too."""
    go = pytest.importorskip("plotly.graph_objects")
    from plotly.subplots import make_subplots

    from graphwidget.views.plotly_inline import escape_labels, figures_html

    fig = make_subplots(rows=1, cols=2, subplot_titles=(HOSTILE_LINK, "plain"))
    fig.add_trace(go.Bar(x=[HOSTILE_LINK, "b"], y=[1, 2], name=HOSTILE_LINK, legendgrouptitle_text=HOSTILE_LINK,
                         hovertemplate="%{x}<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Heatmap(z=[[1, 2]], colorbar={"title": {"text": HOSTILE_LINK}}), row=1, col=2)
    fig.update_layout(title=HOSTILE_LINK, legend_title_text=HOSTILE_LINK, xaxis_title=HOSTILE_LINK,
                      yaxis={"tickvals": [1], "ticktext": [HOSTILE_LINK]})
    escape_labels(fig)
    text = json.dumps(fig.to_plotly_json())
    assert "<a href" not in text.replace('"hovertemplate": "%{x}<extra></extra>"', ""), text[:500]
    esc = HOSTILE_LINK.replace("<", "&lt;").replace(">", "&gt;")
    assert fig.layout.title.text == fig.layout.xaxis.title.text == fig.layout.legend.title.text == esc
    assert fig.layout.annotations[0].text == esc and fig.layout.yaxis.ticktext == (esc,)
    assert fig.data[0].name == fig.data[0].legendgrouptitle.text == fig.data[1].colorbar.title.text == esc
    assert fig.data[0].hovertemplate == "%{x}<extra></extra>"  # a template is markup by design: left alone
    before = fig.to_plotly_json()
    assert escape_labels(go.Figure(fig)).to_plotly_json() == before  # once, on a copy too
    assert escape_labels(fig).to_plotly_json() == before
    fig.update_layout(title="<b>later</b>")
    escape_labels(fig)
    assert fig.layout.title.text == "&lt;b&gt;later&lt;/b&gt;" and fig.layout.xaxis.title.text == esc
    html = "".join(figures_html([fig], include_plotlyjs=False))
    assert "<a href" not in html and "<b>later" not in html


def test_diff_figure_escapes_the_labels_in_its_title() -> None:
    pytest.importorskip("plotly")
    g = hostile_graph()
    d = gw.diff(g, gw.load_json(g.to_json()), labels=(HOSTILE_LINK, "B"))
    fig = d.figure()
    text = json.dumps(fig.to_plotly_json())
    assert "<a href" not in text and "<b>" not in text, text[:300]
    assert fig.layout.title.text.startswith("&lt;a href=")


def test_every_chart_builder_returns_escaped_text() -> None:
    """views/charts.py: each builder, not only charts.figure(), returns a figure whose op names, source lines and
    module paths are text (a figure shown straight from time_by(...) in a notebook carries no markup)."""
    pytest.importorskip("plotly")
    from graphwidget.views import charts

    g = hostile_graph()
    for build in (lambda: charts.time_by(g, "op"), lambda: charts.time_by(g, "module"),
                  lambda: charts.time_by(g, "source"), lambda: charts.top_nodes(g), lambda: charts.pareto(g),
                  lambda: charts.memory(g), lambda: charts.dashboard(g)):
        text = json.dumps(build().to_plotly_json())
        assert "<a href" not in text and "<b>" not in text and "&lt;a href" in text, text[:300]


def test_documents_built_in_python_with_subclasses_still_load(doc: Dict[str, Any]) -> None:
    """from_dict takes Python objects too: an OrderedDict record or a float subclass (numpy's float64) is what it
    says it is, as before the per-field checks."""
    from collections import OrderedDict

    from graphwidget.model import io

    class Ms(float):
        pass

    d = copy.deepcopy(doc)
    d["nodes"] = [OrderedDict(n) for n in d["nodes"]]
    n = node_with(d, lambda n: n.get("fwd_ms") is not None)
    n["fwd_ms"] = Ms(0.5)
    assert io.from_dict(d).node(n["id"])["fwd_ms"] == 0.5


# -- gzip: a bomb is refused as it grows; real files, several members and padding load ------------------------------
def test_a_gzip_bomb_is_refused_before_it_fills_memory(tmp_path: Path, doc: Dict[str, Any],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import gzip
    import tracemalloc
    text = json.dumps(doc)
    # JSON with 64 MB of whitespace after it: valid, and what a bomb looks like (it compresses about 1000 to 1)
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb") as f:
        f.write(text.encode())
        for _ in range(64):
            f.write(b" " * (1 << 20))
    monkeypatch.setenv("GRAPHWIDGET_MAX_JSON_BYTES", str(4 << 20))
    tracemalloc.start()
    try:
        for read in (lambda: gw.load(bomb), lambda: gw.load_json(bomb.read_bytes())):
            with pytest.raises(gw.SchemaError, match=r"decompresses to more than 4194304 bytes .*"
                                                     r"GRAPHWIDGET_MAX_JSON_BYTES"):
                read()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"{peak} bytes held while refusing a 64 MB bomb with a 4 MB limit"
    monkeypatch.setenv("GRAPHWIDGET_MAX_JSON_BYTES", str(80 << 20))  # raised, as the message says: it loads
    assert len(gw.load(bomb)) == len(gw.load_json(text))
    monkeypatch.setenv("GRAPHWIDGET_MAX_JSON_BYTES", "lots")
    with pytest.raises(gw.SchemaError, match="GRAPHWIDGET_MAX_JSON_BYTES='lots': a number of bytes > 0"):
        gw.load(bomb)
    monkeypatch.delenv("GRAPHWIDGET_MAX_JSON_BYTES")
    # as gzip.decompress reads them: two members one after the other, zero padding after the last
    half = len(text) // 2
    two = tmp_path / "two.json.gz"
    two.write_bytes(gzip.compress(text[:half].encode()) + gzip.compress(text[half:].encode()) + b"\0" * 8)
    assert len(gw.load(two)) == len(gw.load_json(text))
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(text.encode())[:-12])
    with pytest.raises(gw.SchemaError, match="not a complete gzip file"):
        gw.load(cut)
    junk = tmp_path / "junk.json.gz"
    junk.write_bytes(gzip.compress(text.encode()) + b"not gzip")
    with pytest.raises(gw.SchemaError, match="not a complete gzip file"):
        gw.load(junk)


@pytest.mark.parametrize("version", [1, 2])
def test_a_stride_shorter_than_its_shape_is_refused_at_load(version: int) -> None:
    # before: accepted, then advise() raised IndexError deep in the memory-layout rule
    x = torch.randn(4, 6, requires_grad=True)
    g = gw.capture((x.t().contiguous() * x.t()).sum())
    doc = json.loads(g.to_json(version=version))
    text = json.dumps(doc)
    bad = copy.deepcopy(doc)
    if version == 1:
        node = next(n for n in bad["nodes"] if n.get("saved"))
        node["saved"][0]["stride"] = node["saved"][0]["stride"][:1]
        where = fr"node {node['id']}\b.*saved\[0\]\.stride must have one entry per dimension"
    else:
        column = bad["nodes"]["saved"]
        values = column["table"] if isinstance(column, dict) and "table" in column else column
        rec = next(v for v in values if v)
        rec[0]["stride"] = rec[0]["stride"][:1]
        where = r"saved\[0\]\.stride must have one entry per dimension"
    with pytest.raises(gw.SchemaError, match=where):
        gw.load_json(json.dumps(bad))
    same = gw.load_json(text)  # the untouched document loads, and the rule that indexed the stride runs
    gw.advise(same)


@pytest.mark.parametrize("where", ["source", "module", "attrs"])
def test_a_lone_surrogate_is_refused_at_load_naming_the_field(doc: Dict[str, Any], tmp_path: Path, where: str) -> None:
    # before: accepted, then export_html raised UnicodeEncodeError
    bad = copy.deepcopy(doc)
    node = next(n for n in bad["nodes"] if n.get("kind") == "backward")
    if where == "attrs":
        node["attrs"] = {"note": "half \ud800 a pair"}
    else:
        node[where] = "model.py\ud800:3"
    for text in (json.dumps(bad), json.dumps(bad, ensure_ascii=False)):  # escaped, and the code point itself
        with pytest.raises(gw.SchemaError, match=r"nodes\[\d+\]\.%s.* holds a lone surrogate" % where):
            gw.load_json(text)
    # a pair is one character (an emoji in a path): it loads and exports
    good = copy.deepcopy(doc)
    node = next(n for n in good["nodes"] if n.get("kind") == "backward")
    node["source"] = "models/\U0001F600.py:3"
    g = gw.load_json(json.dumps(good))
    assert any("\U0001F600" in (d.get("source") or "") for _, d in g.nx.nodes(data=True))
    assert gw.export_html(g, tmp_path / "g.html").stat().st_size > 0  # the data is packed (gzip): it encodes
