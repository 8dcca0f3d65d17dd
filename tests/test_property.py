"""Property-based: random programs of torch ops; the captured node count equals an independent count.

The independent count is kept by the program generator itself, in Python: every op it applies creates exactly one
autograd node, and each value remembers the set of op/leaf labels it depends on. The graph of the final value has
one node per label in that set (plus the final sum), whatever torch's graph looks like.
"""
from __future__ import annotations

import json

import networkx as nx
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import graphwidget as gw

UNARY = {
    "sin": torch.sin, "exp": lambda t: (t * 0.1).exp(), "neg": torch.neg, "tanh": torch.tanh,
    "mul_scalar": lambda t: t * 1.5, "relu": torch.relu,
}
# (t * 0.1).exp() makes two nodes; count it as such.
UNARY_NODES = {"exp": 2}
BINARY = {"add": torch.add, "mul": torch.mul, "sub": torch.sub}

step = st.one_of(
    st.tuples(st.just("u"), st.sampled_from(sorted(UNARY)), st.integers(0, 1000)),
    st.tuples(st.just("b"), st.sampled_from(sorted(BINARY)), st.integers(0, 1000), st.integers(0, 1000)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_leaves=st.integers(1, 4), steps=st.lists(step, min_size=0, max_size=25))
def test_node_count_matches_independent_count(n_leaves, steps):
    leaves = [torch.randn(3, requires_grad=True) for _ in range(n_leaves)]
    values = [(t, frozenset({f"leaf{i}"})) for i, t in enumerate(leaves)]
    label = 0
    for s in steps:
        if s[0] == "u":
            t, deps = values[s[2] % len(values)]
            out = UNARY[s[1]](t)
            new = {f"op{label}_{k}" for k in range(UNARY_NODES.get(s[1], 1))}
        else:
            (a, da), (b, db) = values[s[2] % len(values)], values[s[3] % len(values)]
            out = BINARY[s[1]](a, b)
            new, deps = {f"op{label}"}, da | db
        label += 1
        values.append((out, frozenset(deps | new)))
    final, deps = values[-1]
    root = final.sum()
    g = gw.capture(root)
    assert len(g) == len(deps) + 1
    assert g.summary()["leaves"] == sum(1 for d in deps if d.startswith("leaf"))
    assert nx.is_directed_acyclic_graph(g.nx)
    assert nx.is_weakly_connected(g.nx)
    # round trip holds for every random program, too
    assert gw.load_json(g.to_json()).to_json() == g.to_json()
    json.loads(g.to_json())
