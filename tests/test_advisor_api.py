"""The advisor's API on real torch graphs: a finding's fields, text and dict form, arguments checked with what to pass,
findings carried by the graph's JSON and views and validated on load, advice without torch, ``resolved`` across two
versions of a program, printing, and the one scanner the rewrites read lines with. The rules themselves, on their
minimal programs and near-miss twins: tests/test_advisor.py (whose programs these tests reuse, so a finding's line
is in that file)."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from no_torch import BLOCK_TORCH
from test_advisor import SMALL, bmm, data, leaf, repeat_mul

import graphwidget as gw
from graphwidget import examples as ex
from graphwidget.analysis.advisor import RULES, Finding, format_findings, print_findings, resolved
from graphwidget.model import schema


# -- the API ---------------------------------------------------------------------------------------------------------
def test_finding_fields_str_and_dict_round_trip():
    g = gw.trace(repeat_mul, leaf(512, 1), data(512, 1024))
    (f,) = gw.advise(g)
    assert isinstance(f, Finding) and f.rule in RULES
    line = str(f)
    assert "\n" not in line and line.startswith("warning repeat-broadcast test_advisor.py:")
    assert f.message in line
    d = f.to_dict()
    assert tuple(d) == schema.FINDING_KEYS
    assert Finding.from_dict(json.loads(json.dumps(d))) == f
    with pytest.raises(ValueError, match="lacks rule"):
        Finding.from_dict({"severity": "info", "nodes": [], "message": "m"})
    with pytest.raises(ValueError, match="severity must be one of"):
        Finding(rule="x", severity="error", nodes=[], message="m")


def test_bad_arguments_say_what_to_pass():
    g = gw.trace(repeat_mul, leaf(8, 1), data(8, 4))
    with pytest.raises(ValueError, match="unknown rule 'repeat'; the rules are repeat-broadcast, "):
        g.advise(rules=["repeat"])
    with pytest.raises(ValueError, match=r"min_share=\.\.\.\) is a fraction in \[0, 1\)"):
        g.advise(min_share=5)
    with pytest.raises(TypeError, match="advise expects a GradGraph .* got Tensor"):
        gw.advise(torch.ones(2))
    assert g.advise(rules="repeat-broadcast", min_share=0) == g.advise(rules=["repeat-broadcast"], min_share=0)


def test_findings_travel_with_the_json_and_the_views():
    g = gw.trace(ex.homography_repeat, **ex.homography_inputs(**SMALL))
    assert g.findings is None and "findings" not in g.to_dict()
    fs = g.advise()
    doc = json.loads(g.to_json())
    assert doc["findings"] == [f.to_dict() for f in fs]
    g2 = gw.load_json(g.to_json())
    assert g2.findings == doc["findings"]
    from graphwidget.views.packed import unpack
    from graphwidget.views.payload import graph_payload
    assert unpack(graph_payload(g).gzipped())["findings"] == doc["findings"]
    # a stored list is validated like the rest of the file
    bad = dict(doc, findings=[dict(doc["findings"][0], nodes=[10_000])])
    with pytest.raises(ValueError, match=r"findings\[0\] names node 10000, which is not in \"nodes\""):
        gw.load_json(json.dumps(bad))
    bad = dict(doc, findings=[dict(doc["findings"][0], severity="fatal")])
    with pytest.raises(ValueError, match=r"findings\[0\]: \"severity\" must be one of"):
        gw.load_json(json.dumps(bad))


def test_loaded_graphs_get_the_same_findings():
    g = gw.trace(ex.homography_repeat, **ex.homography_inputs(**SMALL))
    h = gw.load_json(g.to_json())
    assert [f.to_dict() for f in h.advise()] == [f.to_dict() for f in g.advise()]


def test_advise_without_torch(tmp_path: Path):
    g = gw.trace(ex.homography_repeat, **ex.homography_inputs(**SMALL))
    (tmp_path / "seed.json").write_text(g.to_json())
    a = torch.randn(64, 64, 64).permute(2, 0, 1)
    (tmp_path / "bmm.json").write_text(gw.trace(bmm, a, leaf(64, 64, 32)).to_json())
    code = BLOCK_TORCH + textwrap.dedent(f"""
        import graphwidget as gw
        g = gw.load_json(open({str(tmp_path / 'seed.json')!r}).read())
        print([f.rule for f in gw.advise(g)])
        print([f.rule for f in gw.load_json(open({str(tmp_path / 'bmm.json')!r}).read()).advise()])
        assert "torch" not in sys.modules
        print("OK")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=240, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:3] == ["['repeat-broadcast']", "[]", "OK"]


def test_resolved_matches_by_rule_and_line():
    a = gw.trace(ex.homography_repeat, **ex.homography_inputs(**SMALL)).advise()
    b = gw.trace(ex.homography_broadcast, **ex.homography_inputs(**SMALL)).advise()
    assert resolved(a, b) == a and resolved(a, a) == [] and resolved(b, a) == []
    # dicts (graph.findings, JSON) work the same
    assert resolved([f.to_dict() for f in a], [f.to_dict() for f in b]) == a
    # the same line moved down by an edit above it: same file and code, not resolved
    moved = [dict(f.to_dict(), source=f.source.rsplit(":", 1)[0] + ":99") for f in a]
    assert resolved(a, moved) == []
    # another rule at the same line is another finding
    other = [dict(f.to_dict(), rule="index-repeated") for f in a]
    assert resolved(a, other) == a


def test_resolved_without_source_lines_uses_op_and_shape():
    x, y = leaf(512, 1), data(512, 1024)
    a = gw.capture(repeat_mul(x, y)).advise()
    assert len(a) == 1 and resolved(a, gw.capture(repeat_mul(x, y)).advise()) == []
    assert resolved(a, gw.capture((x * y).sum()).advise()) == a
    assert resolved(a, gw.capture(repeat_mul(leaf(256, 1), data(256, 1024))).advise()) == a


def test_format_and_print_findings(capsys: pytest.CaptureFixture):
    g = gw.trace(ex.homography_repeat, title="seed", **ex.homography_inputs(**SMALL))
    print_findings(g)  # advises on first use
    out = capsys.readouterr().out
    assert out.startswith("findings for 'seed':\n1. warning repeat-broadcast at homography.py:")
    assert "fix: h = homo.unsqueeze(1)" in out and "evidence: ~" in out
    assert format_findings([]) == "No findings."


def test_rewrites_read_the_line_with_one_scanner_that_respects_strings():
    """strip_comment, the call's end and its arguments share one scanner: a comma, bracket or ``#`` inside a string
    is text, a backslash escapes a quote."""
    from graphwidget.analysis.advisor import suggest
    assert suggest.strip_comment('x = f("a # b") # note') == 'x = f("a # b")'
    assert suggest.strip_comment(r'x = "say \"#\"" # c') == r'x = "say \"#\""'
    assert suggest.call_argument('y = torch.bmm(f("a,b"), w)', ("bmm",), 1) == "w"
    assert suggest.unwrap_function('y = torch.tile(g("(", x), (1, n))', "torch.tile") == 'y = g("(", x)'
    assert suggest.drop_method("h = homo.unsqueeze(1).repeat(1, n, 1, 1)  # (B, n, 3, 3)", "repeat") == \
        "h = homo.unsqueeze(1)"
