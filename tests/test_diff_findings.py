"""The diff document carries the advisor's findings of both sides and which of A's are gone in B ("findings":
{"a", "b", "resolved"}), for the diff view to show as resolved. Real traces of the seed pair; no timing."""
from __future__ import annotations

import json

import graphwidget as gw
from graphwidget.analysis.advisor import resolved

EX = gw.examples


def seed_pair():
    inp = EX.homography_inputs(batch=2, height=8, width=8)
    return gw.trace(EX.homography_repeat, **inp), gw.trace(EX.homography_broadcast, **inp)


def test_the_repeat_finding_of_a_is_resolved_in_the_broadcast_b() -> None:
    ga, gb = seed_pair()
    ga.advise()
    gb.advise()
    assert [f["rule"] for f in ga.findings] == ["repeat-broadcast"] and gb.findings == []
    d = gw.diff(ga, gb, labels=("repeat", "broadcast"))
    doc = json.loads(d.to_json())
    f = doc["findings"]
    assert f == d.to_dict()["findings"]
    assert f["a"] == ga.findings and f["b"] == gb.findings
    assert f["resolved"] == [0]
    # the indices name exactly what advisor.resolved says is gone
    assert [f["a"][i]["rule"] for i in f["resolved"]] == [x.rule for x in resolved(ga.findings, gb.findings)]
    # the document round-trips with its findings (the graphs carry theirs; resolved is the same again)
    back = gw.load_json(d.to_json())
    assert isinstance(back, gw.Diff) and json.loads(back.to_json())["findings"] == f


def test_a_finding_both_sides_still_have_is_not_resolved() -> None:
    ga, _ = seed_pair()
    ga2, _ = seed_pair()
    ga.advise()
    ga2.advise()
    f = gw.diff(ga, ga2).to_dict()["findings"]
    assert len(f["a"]) == len(f["b"]) == 1 and f["resolved"] == []
    # reversed: the broadcast graph (A) has nothing, so nothing can be resolved
    _, gb = seed_pair()
    gb.advise()
    f = gw.diff(gb, ga).to_dict()["findings"]
    assert f["a"] == [] and len(f["b"]) == 1 and f["resolved"] == []


def test_a_side_never_advised_is_null_and_resolves_nothing() -> None:
    ga, gb = seed_pair()
    assert gw.diff(ga, gb).to_dict()["findings"] is None  # neither advised: the key stays null, as before
    ga.advise()
    f = gw.diff(ga, gb).to_dict()["findings"]
    # B was never looked at: its findings are unknown (null, not []), so A's finding is not claimed as fixed
    assert f["b"] is None and len(f["a"]) == 1 and f["resolved"] == []
    f = gw.diff(gb, ga).to_dict()["findings"]
    assert f["a"] is None and len(f["b"]) == 1 and f["resolved"] == []
