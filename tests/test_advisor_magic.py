"""``%gradgraph --advise`` through IPython's own test shell, with real torch: the findings are computed, stored on
the graph, and printed *after* the cell's result (under the widget in a notebook; tests/test_notebooks.py checks
that in a real kernel)."""
from __future__ import annotations

from typing import Iterator

import pytest
from IPython.core.interactiveshell import InteractiveShell


@pytest.fixture(scope="module")
def ip(ip: InteractiveShell) -> Iterator[InteractiveShell]:
    """The shared shell (conftest) with the seed's inputs defined."""
    shell = ip
    shell.run_cell("import torch, graphwidget as gw\n"
                   "from graphwidget import examples as ex\n"
                   "inp = ex.homography_inputs(batch=2, height=32, width=32)\n", store_history=False)
    yield shell


def test_advise_prints_the_findings_after_the_result(ip: InteractiveShell, capsys: pytest.CaptureFixture):
    res = ip.run_cell("%gradgraph --trace --advise ex.homography_repeat(**inp)", store_history=True)
    out = capsys.readouterr().out
    assert out.index("<GradGraph") < out.index("graphwidget advisor (ex.homography_repeat(**inp)):")
    assert "1. warning repeat-broadcast at homography.py:" in out and "fix: h = homo.unsqueeze(1)" in out
    assert [f["rule"] for f in res.result.findings] == ["repeat-broadcast"]
    # the callback ran once and is gone: the next cell prints nothing more
    ip.run_cell("1 + 1", store_history=True)
    assert "graphwidget advisor" not in capsys.readouterr().out


def test_advise_with_an_assignment_and_in_the_cell_magic(ip: InteractiveShell, capsys: pytest.CaptureFixture):
    ip.run_cell("g = %gradgraph --advise ex.homography_broadcast(**inp)", store_history=True)
    out = capsys.readouterr().out
    assert "graphwidget advisor (ex.homography_broadcast(**inp)):\n  No findings." in out
    assert ip.user_ns["g"].findings == []
    ip.run_cell("%%gradgraph --trace --advise --output loss\nloss = ex.homography_repeat(**inp).sum()\n",
                store_history=True)
    assert "repeat-broadcast" in capsys.readouterr().out


def test_advise_outside_a_cell_prints_at_once(ip: InteractiveShell, capsys: pytest.CaptureFixture):
    g = ip.run_line_magic("gradgraph", "--advise ex.homography_repeat(**inp)")
    out = capsys.readouterr().out
    assert out.startswith("graphwidget advisor (ex.homography_repeat(**inp)):\n1. warning repeat-broadcast at ?")
    assert g.findings and g.findings[0]["source"] is None  # captured without --trace: no source lines


def test_advise_is_in_the_help(ip: InteractiveShell):
    assert "--advise" in ip.magics_manager.magics["line"]["gradgraph"].__doc__


def test_advise_with_html_exports_the_findings(ip: InteractiveShell, tmp_path, capsys: pytest.CaptureFixture):
    import base64
    import re

    from graphwidget.views.packed import unpack
    path = tmp_path / "advised.html"
    ip.run_line_magic("gradgraph", f"--trace --advise --html {path} ex.homography_repeat(**inp)")
    capsys.readouterr()
    data = re.search(r'id="gw-graph-data"[^>]*>([^<]+)<', path.read_text()).group(1)
    doc = unpack(base64.b64decode(data))
    assert [f["rule"] for f in doc["findings"]] == ["repeat-broadcast"]
