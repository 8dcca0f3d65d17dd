"""The binary payload the viewer reads (graphwidget/views/packed.py), on the Python side: what it holds reads back
exactly as the version 1 records, whatever forms the columns take; the same input gives the same bytes; what JSON
cannot carry is refused naming the field. The front end's reader against this writer: tests/browser/test_big_graphs.py.
"""
from __future__ import annotations

import gzip
import json
import struct
from typing import Any, Dict

import pytest
import torch
from test_files import hostile_graph

import graphwidget as gw
from graphwidget.model.graph import GradGraph
from graphwidget.views import packed
from graphwidget.views.diff_payload import diff_payload
from graphwidget.views.payload import graph_payload


def forms(desc: Dict[str, Any]) -> Dict[str, str]:
    """The form of every column of a graph's descriptor ("nodes.op": "table", ...)."""
    return {f"{blk}.{k}": next(f for f in ("const", "table", "ints", "nums", "rows") if f in c)
            for blk in ("nodes", "edges") for k, c in desc[blk].items() if k != "count"}


@pytest.fixture(scope="module")
def traced() -> GradGraph:
    torch.manual_seed(0)
    lin = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    x = torch.randn(3, 4, requires_grad=True)
    g = gw.profile(lambda m, t: (m(t).tanh() * 2).sum(), lin, x, repeat=1, warmup=0)
    g.advise()
    return g


def test_a_payload_reads_back_as_the_records(traced: GradGraph) -> None:
    for g in (traced, hostile_graph()):
        data = packed.pack_graph(g)
        assert data[:2] == b"\x1f\x8b" and packed.is_packed(data)
        assert packed.unpack(data) == g.to_dict(version=1)
        assert packed.pack_graph(g) == data  # the same graph, the same bytes
    assert packed.unpack(graph_payload(traced.to_json()).gzipped()) == traced.to_dict(version=1)


def test_a_diff_and_an_nway_document_carry_packed_graphs(traced: GradGraph) -> None:
    other = gw.load_json(traced.to_json())
    d = gw.diff(traced, other)
    sent = packed.unpack(diff_payload(d).gzipped())
    # the diff file's own document, with each graph read back as records (the file holds them as version 2)
    assert sent == {**json.loads(d.to_json()), "a": d.a.to_dict(version=1), "b": d.b.to_dict(version=1)}
    from graphwidget.views.nway_view import payload
    m = gw.diff({"a": traced, "b": other, "c": other})
    assert packed.unpack(payload(m)[0]) == {**json.loads(m.to_json()),
                                            "graphs": [m.graphs[x].to_dict(version=1) for x in m.sides]}


def test_columns_take_the_form_their_values_need() -> None:
    n = 300
    nodes = [{"op": "MulBackward0" if k % 2 else "AddBackward0", "kind": "backward", "outputs": None, "saved": [],
              "attrs": {"flag": k % 3 == 0}, "saved_bytes": 2**40 + k, "tensor": None, "source": None,
              "code": f"y{k} = x * {k}", "module": None, "seq": k if k % 5 else None, "fwd_ms": k / 7,
              "bwd_ms": None, "grad_bytes": 2**60 + k} for k in range(n)]
    edges = [(k - 1, k, {"output": 0, "slot": 0, "shape": [k], "dtype": "float32", "also": None}) for k in range(1, n)]
    g = GradGraph.from_records(nodes, edges, roots=[n - 1])
    p = packed.Packer()
    f = forms(p.graph(g))
    assert f["nodes.id"] == "ints" and f["edges.source"] == "ints"  # int32 deltas
    assert f["nodes.op"] == "table" and f["nodes.kind"] == "const" and f["nodes.attrs"] == "table"  # true stays true
    assert f["nodes.seq"] == "ints" and f["nodes.saved_bytes"] == "nums" and f["nodes.fwd_ms"] == "nums"
    assert f["nodes.grad_bytes"] == "rows"  # past 2**53: a float64 would not hold it exactly
    assert f["nodes.code"] == "rows" and f["edges.shape"] == "rows"
    back = packed.unpack(packed.pack_graph(g))
    assert back == g.to_dict(version=1)
    assert back["nodes"][3]["attrs"] == {"flag": True} and back["nodes"][5]["seq"] is None


def test_what_json_cannot_carry_is_refused_naming_the_field(traced: GradGraph) -> None:
    g = gw.load_json(traced.to_json())
    first = next(iter(g.nx.nodes))
    g.nx.nodes[first]["fwd_ms"] = float("nan")
    with pytest.raises(ValueError, match=r"the nodes' \"fwd_ms\" hold NaN or Infinity.*set it to None"):
        gw.GraphWidget(g)
    g.nx.nodes[first]["fwd_ms"] = None
    g.nx.nodes[first]["attrs"] = {"scale": float("inf")}
    for _ in range(2):  # an encoding stopped half-way leaves nothing behind
        with pytest.raises(ValueError, match=r"the nodes' \"attrs\" hold NaN or Infinity"):
            gw.export_html(g, "/dev/null")
    g.nx.nodes[first]["attrs"] = {}
    assert packed.unpack(packed.pack_graph(g)) == g.to_dict(version=1)


def test_the_reader_refuses_what_is_not_a_payload_of_its_version(traced: GradGraph) -> None:
    raw = gzip.decompress(packed.pack_graph(traced))
    with pytest.raises(ValueError, match="not a graphwidget payload of version 1"):
        packed.unpack(raw[:4] + struct.pack("<I", 2) + raw[8:])
    with pytest.raises(ValueError, match="not a graphwidget payload"):
        packed.unpack(raw[:-8])
    assert not packed.is_packed(gzip.compress(b'{"format": "graphwidget"}'))
