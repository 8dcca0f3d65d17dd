"""A node's record as handed out by ``g.node`` is the node's own (issue 30): capture shares equal values between
nodes (one ``outputs`` list for every node with the same outputs), and editing one node's record changed another's."""
from __future__ import annotations

import torch

import graphwidget as gw


def test_editing_one_nodes_record_changes_no_other_node_and_not_the_graph() -> None:
    x = torch.randn(4, 3, requires_grad=True)
    g = gw.trace(lambda t: sum(t[i] for i in range(4)).sum(), x)
    sel = g.nodes(op="SelectBackward0")
    assert len(sel) == 4  # (where torch gives each node's outputs, capture shares one list between the four)
    before = g.to_json()
    a = g.node(sel[0])
    a["outputs"].append({"shape": [1], "dtype": "x", "device": "y"})
    a["outputs"][0]["shape"].append(99)
    a["op"] = "Edited"
    a.setdefault("saved", []).append({"name": "junk"})
    for v in sel:
        assert g.node(v)["outputs"] == [{"shape": [3], "dtype": "float32", "device": "cpu"}], v
        assert g.node(v)["op"] == "SelectBackward0"
    assert g.to_json() == before  # the graph itself is untouched
    assert g.node(sel[0]) == g.nx.nodes[sel[0]] and g.node(sel[0]) is not g.nx.nodes[sel[0]]


def test_a_loaded_graphs_records_are_the_nodes_own_too() -> None:
    x = torch.randn(3, 2, requires_grad=True)
    g = gw.load_json(gw.trace(lambda t: (t[0] * t[1] + t[2]).sum(), x).to_json())
    sel = g.nodes(op="SelectBackward0")
    g.node(sel[0])["outputs"].clear()
    assert all(g.node(v)["outputs"] for v in sel)
