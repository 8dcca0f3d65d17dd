"""Version 2 of the graph document (docs/schema.md, "Version 2: columns"): exact round trips, compact files, the old
format still read, files on disk (``.json.gz``), and refusals as precise as version 1's (tests/test_files.py)."""
from __future__ import annotations

import copy
import gzip
import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
import torch

import graphwidget as gw
from graphwidget.model import schema
from graphwidget.model.columns import encode_column
from graphwidget.model.graph import GradGraph

sys.path.insert(0, str(Path(__file__).resolve().parent / "bench"))
import test_files  # noqa: E402  (the version 1 fixture and its mutations)
from bench_diff import random_pair  # noqa: E402

V1_FILE = Path(__file__).resolve().parent / "data" / "graph_v1.json"


def same_graph(a: GradGraph, b: GradGraph) -> None:
    """Every node attribute (the keys the document holds), every edge attribute, node and edge order, meta and
    findings are equal, and of the same JSON type (1, 1.0 and true differ)."""
    keys = schema.node_keys(a.meta)
    assert list(a.nx.nodes) == list(b.nx.nodes)
    for n, d in a.nx.nodes(data=True):
        got = b.nx.nodes[n]
        assert tuple(got) == keys
        for k in keys:
            assert json.dumps(got[k]) == json.dumps(d.get(k)), (n, k)
    ea = [(u, v, {k: e.get(k) for k in schema.EDGE_KEYS}) for u, v, e in a.nx.edges(data=True)]
    assert json.dumps(list(b.nx.edges(data=True))) == json.dumps(ea)
    assert json.dumps(b.meta) == json.dumps(a.meta) and b.findings == a.findings


@pytest.fixture(scope="module")
def profiled() -> GradGraph:
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 3)
    x = torch.randn(2, 3, requires_grad=True)
    g = gw.profile(lambda m, t: (m(t).exp() * t).sum(), lin, x, repeat=1, warmup=0)
    g.advise()
    return g


def test_round_trip_is_exact(profiled: GradGraph) -> None:
    text = profiled.to_json()
    doc = json.loads(text)
    assert doc["version"] == schema.VERSION == 3 and isinstance(doc["nodes"], dict)
    back = gw.load_json(text)
    same_graph(profiled, back)
    assert back.to_json() == text  # and writes the same text again
    assert json.loads(json.dumps(profiled.to_dict())) == doc
    old = profiled.to_json(version=2)  # what releases before version 3 read: the flat forms only
    assert json.loads(old)["version"] == 2 and "fields" not in old and "lists" not in old
    same_graph(profiled, gw.load_json(old))
    assert gw.load_json(old).to_json() == text


def test_loaded_node_dicts_share_keys_but_nothing_else(profiled: GradGraph) -> None:
    """The node dicts built from a file's columns share one key table (less memory) and nothing else: a value changed
    or a key added on one node (memory profiling adds ``peak_bytes``) stays there, and the next load is untouched."""
    text = profiled.to_json()
    g = gw.load_json(text)
    a, b = list(g.nx.nodes)[:2]
    g.nx.nodes[a]["op"] = "Changed"
    g.nx.nodes[a]["note"] = 1
    assert g.nx.nodes[b]["op"] != "Changed" and "note" not in g.nx.nodes[b]
    assert list(g.nx.nodes[a])[-1] == "note" and type(g.nx.nodes[a]) is dict
    again = gw.load_json(text)
    assert again.nx.nodes[a]["op"] != "Changed" and tuple(again.nx.nodes[a]) == schema.node_keys(again.meta)
    same_graph(profiled, again)


def test_round_trip_of_a_random_dag_and_awkward_values() -> None:
    """Values a column must not merge: 1, 1.0 and true; "1" and 1; [] and {}; key order inside records."""
    a, _ = random_pair(3000, seed=3)
    nodes = list(a.nx.nodes)
    odd = [1, 1.0, True, "1", [], {}, {"b": 1, "a": 2}, {"a": 2, "b": 1}, None, -0.0, 2**53 - 1, "é\u2028"]
    for i, n in enumerate(nodes[:len(odd) * 40]):
        a.nx.nodes[n]["attrs"] = {"v": odd[i % len(odd)]}
        a.nx.nodes[n]["fwd_ms"] = [0.5, 1, 0][i % 3]
    back = gw.load_json(a.to_json())
    same_graph(a, back)
    assert back.to_json() == a.to_json()


def test_column_forms_follow_the_json_text() -> None:
    """Rows share a table entry or a constant exactly when they write the same JSON, whatever path finds it: the
    constant shortcuts (one scalar type, empty containers), nested values, and a str subclass inside one (keyed by
    repr, as the bytes it is otherwise keyed by cannot hold it)."""
    class Name(str):
        pass

    assert encode_column([[], [], []]) == {"const": []} and encode_column([{}, {}]) == {"const": {}}
    assert encode_column([None] * 4) == {"const": None} and encode_column([True] * 3) == {"const": True}
    assert encode_column([1, True, 1, 1]) == {"table": [1, True], "index": [0, 1, 0, 0]}
    assert encode_column([[], {}, [], []]) == {"table": [[], {}], "index": [0, 1, 0, 0]}
    nested = [[1], [1.0], [True], [1], [1.0], [True], [1], [1]]
    assert encode_column(nested) == {"table": [[1], [1.0], [True]], "index": [0, 1, 2, 0, 1, 2, 0, 0]}
    col = encode_column([{"name": Name("x")}, {"name": "x"}, {"name": Name("y")}, {"name": "x"}, {"name": "x"}])
    assert json.dumps(col) == '{"table": [{"name": "x"}, {"name": "y"}], "index": [0, 0, 1, 0, 0]}'
    # equal as numbers, different as JSON: -0.0 keeps its sign, in a table and nested
    assert encode_column([0.0, -0.0, 0.0, 0.0, -0.0, 0.0]) == {"table": [0.0, -0.0], "index": [0, 1, 0, 0, 1, 0]}
    assert encode_column([[0.0], [-0.0], [0.0], [-0.0]]) == {"table": [[0.0], [-0.0]], "index": [0, 1, 0, 1]}


def test_files_are_compact() -> None:
    """The issue's bound: at most 150 bytes per node on the benchmark's random DAG (version 1: ~500)."""
    a, _ = random_pair(20_000)
    size = len(a.to_json().encode("utf-8")) / len(a)
    assert size <= 150, size
    assert len(a.to_json(version=1)) / len(a) > 3 * size


def test_repeated_values_sit_in_tables(profiled: GradGraph) -> None:
    a, _ = random_pair(2000)
    nodes = a.to_dict()["nodes"]
    assert set(nodes["op"]) == {"table", "index"} and len(nodes["op"]["table"]) <= 11
    assert nodes["source"] == {"const": None} and nodes["id"] == {"delta": [0] + [1] * (len(a) - 1)}
    assert set(nodes["outputs"]) == {"table", "index"}


@pytest.mark.parametrize("shared", [True, False], ids=["shared-objects", "an-object-per-row"])
def test_a_column_of_records_keys_by_json_not_by_object(shared: bool) -> None:
    """Lists and objects: rows holding one shared object (a captured or loaded graph) or an object each (a graph
    built record by record) give one table entry per distinct JSON text, never per object, and never merge values
    Python calls equal but JSON writes differently (1, 1.0 and true; 0.0 and -0.0)."""
    kinds = [[1, 2], [1.0, 2], [True, 2], {"x": 0.0}, {"x": -0.0}, None, []]
    rows = [kinds[k % 3] if k % 5 else kinds[3 + k % 4] for k in range(5000)]
    if not shared:
        rows = [copy.deepcopy(v) for v in rows]
    else:
        rows[7] = copy.deepcopy(rows[7])  # an equal copy among the shared objects
    col = encode_column(rows)
    assert set(col) == {"table", "index"}
    texts = [json.dumps(v) for v in col["table"]]
    assert len(set(texts)) == len(texts) == len({json.dumps(v) for v in rows})
    assert [json.dumps(col["table"][i]) for i in col["index"]] == [json.dumps(v) for v in rows]


def test_the_committed_version_1_file_is_read() -> None:
    """Written by the version 1 writer (before this format): read, validated, and equal to what it says."""
    text = V1_FILE.read_text(encoding="utf-8")
    doc = json.loads(text)
    assert doc["version"] == 1
    g = gw.load_json(text)
    assert len(g) == len(doc["nodes"]) and g.nx.number_of_edges() == len(doc["edges"])
    assert json.loads(g.to_json(version=1)) == doc  # every record as written
    same_graph(g, gw.load_json(g.to_json()))  # and through version 2
    bad = copy.deepcopy(doc)
    bad["nodes"][2]["saved_bytes"] = "lots"
    with pytest.raises(gw.SchemaError, match=f"node {bad['nodes'][2]['id']} .*\"saved_bytes\" must be"):
        gw.load_json(json.dumps(bad))


def test_save_and_load_files(tmp_path: Path, profiled: GradGraph) -> None:
    for name in ("g.json", "g.json.gz"):
        p = profiled.save(tmp_path / name)
        raw = p.read_bytes()
        assert (raw[:2] == b"\x1f\x8b") == name.endswith(".gz")
        same_graph(profiled, gw.load(p))
        text = gzip.decompress(raw).decode() if name.endswith(".gz") else raw.decode()
        assert text == profiled.to_json()
    assert len(gw.load_json(gzip.compress(profiled.to_json().encode()))) == len(profiled)
    (tmp_path / "cut.json.gz").write_bytes((tmp_path / "g.json.gz").read_bytes()[:40])
    with pytest.raises(gw.SchemaError, match="not a complete gzip file"):
        gw.load(tmp_path / "cut.json.gz")
    x = torch.randn(3, requires_grad=True)
    d = gw.diff(gw.capture(x.exp().sum()), gw.capture((x.exp() * 2).sum()))
    (tmp_path / "d.json.gz").write_bytes(gzip.compress(d.to_json().encode()))
    assert gw.load(tmp_path / "d.json.gz").matched == d.matched


def test_saving_nan_leaves_no_file(tmp_path: Path, profiled: GradGraph) -> None:
    g = gw.load_json(profiled.to_json())
    g.nx.nodes[0]["fwd_ms"] = float("nan")
    with pytest.raises(ValueError, match="NaN or Infinity"):
        g.save(tmp_path / "g.json")
    assert not (tmp_path / "g.json").exists()


def test_views_get_records_and_diff_documents_embed_either_version(profiled: GradGraph) -> None:
    """The payload of a graph and of its version 2 text unpacks to version 1 records (what the viewer's reader,
    js/src/model/packed.ts, turns back into columns); a diff document embeds its graphs as version 2, as graph files
    hold them, and one with version 1 graphs inside (an older file) is read too."""
    from graphwidget.views.packed import unpack
    from graphwidget.views.payload import graph_payload
    for obj in (profiled, profiled.to_json(), profiled.to_dict()):
        sent = unpack(graph_payload(obj).gzipped())  # the binary payload (views/packed.py), read back as records
        assert sent["nodes"] == profiled.to_dict(version=1)["nodes"] and sent["meta"] == profiled.meta
    d = gw.diff(profiled, gw.load_json(profiled.to_json()))
    doc = json.loads(d.to_json())
    assert doc["a"]["version"] == 3 and doc["b"]["version"] == 3
    doc["a"], doc["b"] = profiled.to_dict(version=1), profiled.to_dict(version=1)
    old = gw.load_json(json.dumps(doc))
    assert old.matched == d.matched and json.loads(old.to_json()) == json.loads(d.to_json())


# -- refusals: version 2 refuses what version 1 refuses, with the same words ---------------------------------------
def split_all(values: List[Any]) -> Any:
    """Version 3's split forms wherever they apply, all the way down (a column of lists: its items and lengths; of
    objects with one key sequence: a column per key), else the writer's flat choice: every row of a small graph
    goes through the lists and fields readers, which the writer uses only where a column's rows mostly differ."""
    if values and all(type(v) is list for v in values) and any(values):
        return {"lists": split_all([x for v in values for x in v]), "lengths": [len(v) for v in values]}
    records = [v for v in values if v is not None]
    if records and all(type(v) is dict for v in records) and records[0] and len({tuple(v) for v in records}) == 1:
        out = {"fields": {k: split_all([v[k] for v in records]) for k in records[0]}}
        if len(records) < len(values):  # the null rows, by number
            out["nulls"] = [k for k, v in enumerate(values) if v is None]
        return out
    return encode_column(values, False)


def as_columns(d: Dict[str, Any], encode: Any, version: int = 2) -> Dict[str, Any]:
    """The version 1 document ``d`` (records) as version 2 or 3: each field a column, encoded by the writer's own
    choice of form (``encode`` true; version 3: lists and records split into columns where the flat forms keep a
    value per row), as plain lists (false), or (``"split"``, version 3) split wherever the forms apply."""
    out = {k: v for k, v in d.items() if k not in ("nodes", "edges")}
    out["version"] = version
    for part, ends in (("nodes", ("id",)), ("edges", ("source", "target"))):
        recs = d[part]
        keys: List[str] = list(ends)
        for r in recs:
            keys += [k for k in r if k not in keys]
        block: Dict[str, Any] = {"count": len(recs)}
        for k in keys:
            values = [r.get(k) for r in recs]
            block[k] = (split_all(values) if encode == "split" else encode_column(values, version >= 3) if encode
                        else values)
        out[part] = block
    return out


def refusal(d: Dict[str, Any]) -> Optional[str]:
    try:
        gw.load_json(json.dumps(d))
    except gw.SchemaError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("encode, version", [(True, 2), (False, 2), (True, 3), ("split", 3)],
                         ids=["tables", "lists", "v3", "split"])
def test_every_mutation_is_judged_as_in_version_1(encode: Any, version: int) -> None:
    """Every field of a saved-tensor node, a leaf, an edge, meta and a finding, set to values of every JSON type
    (tests/test_files.py VALUE_ZOO): versions 2 and 3 accept exactly what version 1 accepts, and refuse the rest
    with the same message (the node's id and row, the field, what to write)."""
    base = test_files.mutation_base(test_files.profiled_doc())
    checked = refused = 0
    for path, _ in test_files.mutation_paths(base):
        for value in test_files.VALUE_ZOO:
            d = copy.deepcopy(base)
            test_files.set_path(d, path, value)
            want = refusal(d)
            got = refusal(as_columns(d, encode, version))
            assert got == want, (path, value)
            checked += 1
            refused += want is not None
    assert checked > 1000 and refused > 300


@pytest.fixture(scope="module")
def v2doc(profiled: GradGraph) -> Dict[str, Any]:
    return json.loads(profiled.to_json())


def v2_refused(d: Dict[str, Any]) -> str:
    msg = refusal(d)
    assert msg is not None, "accepted"
    return msg


def test_refusals_of_the_columns_themselves(v2doc: Dict[str, Any]) -> None:
    n = v2doc["nodes"]["count"]
    cases = [
        (lambda d: d["nodes"].update(op=["MulBackward0"]), f"nodes.op has 1 values but there are {n} rows"),
        (lambda d: d["nodes"].update(op={"table": ["A"], "index": [0] * (n - 1) + [1]}),
         f"nodes.op.index[{n - 1}] must be an index into nodes.op.table (0 to 0); got number 1"),
        (lambda d: d["nodes"].update(op={"table": ["A"], "index": [0] * (n - 1) + [True]}),
         f"nodes.op.index[{n - 1}] must be an index"),
        (lambda d: d["nodes"].update(op={"table": ["A"], "index": [-1] + [0] * (n - 1)}),
         "nodes.op.index[0] must be an index into nodes.op.table (0 to 0); got number -1"),
        (lambda d: d["nodes"].update(op={"table": ["A"], "index": [0] * (n - 1) + [2.0]}),
         f"nodes.op.index[{n - 1}] must be an index"),
        (lambda d: d["nodes"].update(op={"table": ["A"] * 300, "index": [0] * (n - 1) + [300]}),
         f"nodes.op.index[{n - 1}] must be an index into nodes.op.table (0 to 299); got number 300"),
        (lambda d: d["nodes"].update(op={"table": ["A", 7], "index": [0] * (n - 1) + [1]}),
         f"node {n - 1} (nodes[{n - 1}]): \"op\" is missing or not a string"),
        (lambda d: d["nodes"].update(op={"const": ""}), "node 0 (nodes[0]): \"op\" is missing or not a string"),
        (lambda d: d["nodes"].pop("op"), "nodes.op is missing"),
        (lambda d: d["nodes"].update(saved_bytes={"rows": [1]}), "nodes.saved_bytes must be a column"),
        (lambda d: d["nodes"].update(seq={"delta": [0.5] * n}), "nodes.seq.delta must be a list of"),
        (lambda d: d["nodes"].update(id={"delta": [0] * n}), "node id 0 appears twice (nodes[1])"),
        (lambda d: d["nodes"].update(id={"const": -1}), "nodes[0]: \"id\" must be a non-negative integer"),
        (lambda d: d["nodes"].update(count="8"), "nodes.count must be the number of nodes"),
        (lambda d: d.update(nodes=[]), "needs \"nodes\" as an object of columns"),
        (lambda d: d["nodes"].update(grad_bytes={"table": [1, -4], "index": [0] * n}),
         "nodes.grad_bytes.table[1] (no row uses it): \"grad_bytes\" must be a non-negative integer"),
        (lambda d: d["edges"].update(source={"const": 99}), "names node 99, which is not in \"nodes\""),
        (lambda d: d["edges"].update(target=d["edges"]["source"]), "is a self-loop on node"),
        (lambda d: d["edges"].update(shape={"const": "2x3"}),
         "edges[0] (", ),
        (lambda d: d.update(version=4), "version 4 is not supported by this release (it reads versions 1, 2, 3); "
                                        "upgrade graphwidget"),
    ]
    for change, words in cases:
        d = copy.deepcopy(v2doc)
        change(d)
        msg = v2_refused(d)
        assert words in msg, (words, msg)


def scalar_chain(n: int) -> torch.Tensor:
    """``y * 1.0001`` repeated: autograd saves a fresh 0-d tensor (its own storage) per node."""
    x = torch.randn(4, requires_grad=True)
    y = x
    for _ in range(n):
        y = y * 1.0001
    return y.sum()


def test_records_that_differ_in_one_field_are_split_into_columns() -> None:
    """A saved scalar per node: the records differ only in their storage id, so version 3 writes ``saved`` as a
    column of lists whose items are a column per field (the storage ids as steps), reads it back exactly, and the
    loaded graph builds those rows only when something needs them; version 2 keeps one record per row."""
    g = gw.capture(scalar_chain(300))
    text = g.to_json()
    saved = json.loads(text)["nodes"]["saved"]
    assert set(saved) == {"lists", "lengths"} and set(saved["lists"]) == {"fields"}
    fields = saved["lists"]["fields"]
    assert fields["storage"] == {"delta": [fields["storage"]["delta"][0]] + [1] * 299}
    assert fields["dtype"] == {"const": "float64"} and fields["shape"] == {"const": []}
    back = gw.load_json(text)
    from graphwidget.model.columns import Split
    assert isinstance(back.held.cols["saved"][0], Split)  # not built by reading
    same_graph(g, back)
    assert back.to_json() == text and back.summary() == g.summary()
    flat = json.loads(g.to_json(version=2))["nodes"]["saved"]
    assert isinstance(flat, list) and len(flat) == 302
    same_graph(g, gw.load_json(g.to_json(version=2)))


def test_refusals_of_the_split_forms(v2doc: Dict[str, Any]) -> None:
    """A lists or fields column that does not hold together is refused by where it is and what to write; one in a
    document that says version 2 is refused as version 3's; a bad value inside one names the node and field with
    version 1's words (the row-by-row check runs once the bulk check on the parts fails)."""
    n = v2doc["nodes"]["count"]
    rec = {"shape": [2], "stride": [1], "dtype": "float32", "device": "cpu", "contiguous": True,
           "memory_format": "contiguous", "bytes": 8, "storage_bytes": 8, "storage": 0, "freed": False,
           "name": "self", "packed": None, "stale": False}
    good = {"lists": {"fields": {k: {"const": v} for k, v in rec.items()}}, "lengths": [1] * n}
    d = copy.deepcopy(v2doc)
    d["nodes"]["saved"] = good
    g = gw.load_json(json.dumps(d))
    assert all(a["saved"] == [rec] for _, a in g.nx.nodes(data=True))

    def with_saved(col: Any, version: int = 3) -> str:
        d = copy.deepcopy(v2doc)
        d["nodes"]["saved"], d["version"] = col, version
        return v2_refused(d)

    assert "the lists and fields forms of a column are version 3's" in with_saved(good, version=2)
    assert f"nodes.saved.lengths has {n - 1} values but there are {n} rows" in with_saved(
        {**good, "lengths": [1] * (n - 1)})
    assert "nodes.saved.lengths[0] must be the length of row 0's list" in with_saved(
        {**good, "lengths": [-1] + [1] * (n - 1)})
    assert f"nodes.saved.lists.fields.dtype has 1 values but there are {n - 1} rows" in with_saved(
        {"lists": {"fields": {**good["lists"]["fields"], "dtype": ["float32"]}}, "lengths": [0] + [1] * (n - 1)})
    assert "nodes.saved.lists.fields must be an object" in with_saved({"lists": {"fields": []}, "lengths": [1] * n})
    bad = copy.deepcopy(good)
    bad["lists"]["fields"]["dtype"] = {"table": ["float32", 7], "index": [0] * (n - 1) + [1]}
    msg = with_saved(bad)
    assert msg.startswith("graphwidget.load_json: node ") and f"(nodes[{n - 1}])" in msg and "dtype" in msg
    for nulls in ([3, 1], [n + 4], {"const": 0}, [0.5]):
        assert "nodes.saved.lists.nulls must list the null rows" in with_saved({**good, "lists": {
            **good["lists"], "nulls": nulls}})
    bad = copy.deepcopy(good)
    bad["lists"]["fields"]["stride"] = {"const": [1, 1]}
    assert "stride must have one entry per dimension" in with_saved(bad)


def test_index_and_id_bounds_beyond_the_bulk_checks(v2doc: Dict[str, Any]) -> None:
    """An index past 255 into a table of more entries is accepted (the bulk bounds check of small tables converts to
    bytes); an edge's source table may hold an entry no edge uses and still be read (its span is only a shortcut),
    but one an edge uses that names no node is refused."""
    n = v2doc["nodes"]["count"]
    g0 = gw.load_json(json.dumps(v2doc))
    names = [g0.nx.nodes[k]["op"] for k in range(n)]
    distinct = sorted(set(names))
    d = copy.deepcopy(v2doc)
    d["nodes"]["op"] = {"table": [f"Unused{k}" for k in range(300)] + distinct,
                        "index": [300 + distinct.index(x) for x in names]}
    assert refusal(d) is None and [r["op"] for _, r in sorted(gw.load_json(json.dumps(d)).nx.nodes(data=True))] == names
    rows = gw.load_json(json.dumps(v2doc)).held.src  # the sources in the file's row order
    table = sorted(set(rows)) + [n + 5]
    d = copy.deepcopy(v2doc)
    d["edges"]["source"] = {"table": table, "index": [table.index(x) for x in rows]}
    assert refusal(d) is None
    assert sorted(gw.load_json(json.dumps(d)).nx.edges) == sorted(g0.nx.edges)
    d["edges"]["source"]["index"][-1] = len(table) - 1
    assert f"names node {n + 5}, which is not in \"nodes\"" in v2_refused(d)


def test_sorted_sources_are_steps_and_one_way_edges_bound_their_ends(v2doc: Dict[str, Any]) -> None:
    """The writer keeps the edges' sources (sorted: edges run by source) as steps; the reader takes the ends' bounds
    from a sorted column's first and last row and, when every edge points the same way along the ids, from one side's
    least or greatest: each shortcut still refuses an end outside the nodes, on either side, in either direction."""
    n, m = v2doc["nodes"]["count"], v2doc["edges"]["count"]
    assert set(v2doc["edges"]["source"]) == {"delta"} and min(v2doc["edges"]["source"]["delta"][1:]) >= 0
    g0 = gw.load_json(json.dumps(v2doc))
    src, tgt = g0.held.src, g0.held.tgt
    assert all(s > t for s, t in zip(src, tgt))  # ids grow from the root: every edge points down the ids
    d = copy.deepcopy(v2doc)
    d["edges"]["source"]["delta"][-1] += n  # the last source past the nodes (the column stays sorted)
    assert f"names node {src[-1] + n}, which is not in \"nodes\"" in v2_refused(d)
    d = copy.deepcopy(v2doc)
    d["edges"]["target"] = [*tgt[:-1], -1]  # below zero while every edge still points down
    assert "must be node ids (non-negative integers); got number " in v2_refused(d)
    # every edge reversed (the graph read upside down: still acyclic, every edge now points up the ids)
    d = copy.deepcopy(v2doc)
    d["edges"]["source"], d["edges"]["target"] = list(tgt), list(src)
    assert sorted(gw.load_json(json.dumps(d)).nx.edges) == sorted((v, u) for u, v in g0.nx.edges)
    d["edges"]["target"][m // 2] = n + 3
    assert f"names node {n + 3}, which is not in \"nodes\"" in v2_refused(d)
    d["edges"]["target"][m // 2] = src[m // 2]
    d["edges"]["source"][0] = -2
    assert "must be node ids (non-negative integers); got number -2" in v2_refused(d)


def test_a_cycle_in_columns_names_its_nodes(v2doc: Dict[str, Any]) -> None:
    d = copy.deepcopy(v2doc)
    g = gw.load_json(json.dumps(d))
    u, v = next(iter(g.nx.edges))
    edges = d["edges"]
    m = edges["count"]
    src = [e[0] for e in g.nx.edges] + [v]
    tgt = [e[1] for e in g.nx.edges] + [u]
    d["edges"] = {"count": m + 1, "source": src, "target": tgt}
    msg = v2_refused(d)
    assert "cycle" in msg and str(u) in msg and str(v) in msg, msg


def test_ids_need_not_be_dense_or_sorted(profiled: GradGraph) -> None:
    g = gw.load_json(profiled.to_json())
    relabelled = GradGraph(__import__("networkx").relabel_nodes(g.nx, {n: 1000 - 7 * n for n in g.nx}),
                           dict(g.meta, roots=[1000 - 7 * r for r in g.meta["roots"]]))
    back = gw.load_json(relabelled.to_json())
    assert sorted(back.nx.edges) == sorted(relabelled.nx.edges)
    assert {n: d["op"] for n, d in back.nx.nodes(data=True)} == {n: d["op"] for n, d in relabelled.nx.nodes(data=True)}
