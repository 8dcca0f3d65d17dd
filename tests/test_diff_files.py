"""Diff documents people share ("graphwidget-diff", docs/diff.md): a broken or hostile one is refused with a clear
:class:`graphwidget.SchemaError` naming the field and what to write (matched pairs, added/removed ids, changed
entries, the summary's timing and equivalence); an untouched one loads. Graph documents: tests/test_files.py."""
from __future__ import annotations

import copy
import json
from typing import Any, Dict, List

import pytest
import torch
from test_files import schema_error

import graphwidget as gw


@pytest.mark.parametrize("bad", [[[0], 0], [{"a": 1}, 0], [0, [0]], [2**60, 0]])
def test_unhashable_or_huge_ids_in_a_diff_are_refused(bad: List[Any]) -> None:
    x = torch.randn(3, requires_grad=True)
    d = json.loads(gw.diff(gw.capture(x.exp().sum()), gw.capture((x.exp() * 2).sum())).to_json())
    d["changed"] = [[*bad, ["op"]]]
    msg = schema_error(d)
    assert "changed" in msg and "[a_id, b_id, [field, ...]]" in msg, msg


# -- diff documents ("graphwidget-diff") -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def diff_doc() -> Dict[str, Any]:
    """A real compared pair with timing and equivalence (docs/diff.md): exp().sum() vs (exp() * 2).sum()."""
    torch.manual_seed(0)
    x = torch.randn(3, requires_grad=True)
    d = gw.compare(lambda t: t.exp().sum(), lambda t: (t.exp() * 2).sum(), x, profile=True, repeat=3)
    doc = json.loads(d.to_json())
    assert doc["matched"] and doc["added"] and doc["summary"]["timing"] and doc["summary"]["equivalence"]
    return doc


def _pair_not_matched(o: Dict[str, Any]) -> None:
    (x, _), (_, y) = o["matched"][0], o["matched"][1]
    o["changed"] = [[x, y, ["op"]]]


@pytest.mark.parametrize("change, words", [
    (lambda o: o.update(labels=["only one"]), "labels must be two non-empty strings"),
    (lambda o: o.update(labels=[1, "B"]), "labels must be two non-empty strings"),
    (lambda o: o.update(labels="AB"), "labels must be two non-empty strings"),
    (lambda o: o.update(matched={"0": 0}), '"matched" must be a list of [a_id, b_id] pairs'),
    (lambda o: o["matched"].append([0]), "must be a pair [a_id, b_id] of node ids"),
    (lambda o: o["matched"].__setitem__(0, [0, "0"]), "matched[0] must be a pair [a_id, b_id] of node ids"),
    (lambda o: o["matched"].__setitem__(0, [0, True]), "matched[0] must be a pair [a_id, b_id] of node ids"),
    (lambda o: o["matched"].__setitem__(0, [[0], 0]), "matched[0] must be a pair [a_id, b_id] of node ids"),
    (lambda o: o["matched"].__setitem__(0, [99, 0]), "matched[0] names node 99 of A, which is not in that graph"),
    (lambda o: o["matched"].append(list(o["matched"][0])), "is matched twice (matched[0] and matched["),
    (lambda o: o["matched"].__setitem__(1, [o["matched"][1][0], o["matched"][0][1]]),
     "of B is matched twice (matched[0] and matched[1])"),
    (lambda o: o.update(removed=None), '"removed" must be a list of node ids of A'),
    (lambda o: o["removed"].append(o["matched"][0][0]), "and matched[0]; every node of A is matched once or removed"),
    (lambda o: o["added"].append("1"), "names node string '1' of B, which is not in that graph"),
    (lambda o: o["added"].append(o["added"][0]), "\"added\" twice; every node of B is matched once or added"),
    (lambda o: o["added"].pop(), "of B are neither matched nor added; every node of B is matched once or added"),
    (lambda o: o["matched"].pop(), "of A are neither matched nor removed"),
    (lambda o: o.update(changed="all"), '"changed" must be a list of [a_id, b_id, [field, ...]] entries'),
    (lambda o: o.update(changed=[[0, 0]]), 'entries are [a_id, b_id, [field, ...]]'),
    (lambda o: o.update(changed=[[0, 0, "op"]]), 'entries are [a_id, b_id, [field, ...]]'),
    (lambda o: o.update(changed=[[0, 0, [7]]]), 'entries are [a_id, b_id, [field, ...]]'),
    (_pair_not_matched, 'which is not in "matched"'),
    (lambda o: o.update(changed=o["changed"] + o["changed"][:1]), "is listed twice"),
    (lambda o: o.update(summary=[1, 2]), '"summary" must be an object'),
    (lambda o: o["summary"].update(a="lots"), "summary.a must be an object of totals"),
    (lambda o: o["summary"]["b"].update(nodes="3"), "summary.b.nodes must be a finite number or null"),
    (lambda o: o["summary"]["counts"].update(matched=-1), "summary.counts.matched must be a non-negative integer"),
    (lambda o: o["summary"].update(timing="fast"), "summary.timing must be an object or null"),
    (lambda o: o["summary"].update(equivalence=[True]), "summary.equivalence must be an object or null"),
    (lambda o: o["summary"]["timing"].update(ratio=10**400), "summary.timing.ratio is a number of about 401 digits"),
    (lambda o: o["summary"]["timing"].update(new_part={"deep": "@deep@"}),
     "summary.timing.new_part.deep[0][0]"),
    (lambda o: o["summary"]["equivalence"]["tensors"][0].update(max_abs="@@"),
     "summary.equivalence.tensors[0].max_abs is inf"),
    (lambda o: o.update(changes="none"), '"changes" (recomputed on load) must be an object or null'),
    (lambda o: o.update(findings=[1]), '"findings" (recomputed on load) must be an object or null'),
])
def test_a_diff_documents_own_fields_are_checked(diff_doc: Dict[str, Any], change: Any, words: str) -> None:
    """Before, only the two graphs were validated (and the matching partly): a summary that was not an object, NaN or
    infinite numbers in timing/equivalence, ids matched twice went through or were named vaguely."""
    d = copy.deepcopy(diff_doc)
    if not d["changed"]:
        d["changed"] = [[*d["matched"][0], ["op"]]]
    change(d)
    text = json.dumps(d).replace('"@@"', "1e999").replace('"@deep@"', "[" * 70 + "]" * 70)
    msg = schema_error(text)
    assert words in msg, msg
    assert "nested more than 64 levels" in msg or "deep" not in words, msg


def test_timing_and_equivalence_are_not_pinned_to_a_key_set(diff_doc: Dict[str, Any]) -> None:
    """Their contents are being redesigned: new keys of any plain JSON load and are kept."""
    d = copy.deepcopy(diff_doc)
    d["summary"]["timing"]["per_round"] = [{"a_ms": 1.5, "b_ms": 2, "note": None, "kept": True}]
    d["summary"]["equivalence"] = {"verdict": "same", "per_output": {"out": {"max_abs": 0.0, "dims": [3]}}}
    back = gw.load_json(json.dumps(d))
    assert back.timing["per_round"] == d["summary"]["timing"]["per_round"]
    assert back.equivalence == d["summary"]["equivalence"]
    assert json.loads(back.to_json())["summary"]["equivalence"] == d["summary"]["equivalence"]
    for absent in ("timing", "equivalence"):
        d["summary"][absent] = None
    del d["changed"]
    assert gw.load_json(json.dumps(d)).timing is None


def test_the_untouched_diff_loads(diff_doc: Dict[str, Any]) -> None:
    back = gw.load_json(json.dumps(diff_doc))
    assert json.loads(back.to_json())["matched"] == diff_doc["matched"]
