"""Notebooks executed headless with nbclient (a real ipykernel): rich display of a GradGraph, the magics in a kernel,
and notebooks/demo.ipynb top to bottom (with small sizes)."""
from __future__ import annotations

import ast
import os
import re
from pathlib import Path
from typing import Any, Dict, Iterator, List, Sequence

import nbformat
import pytest
from nbclient import NotebookClient
from torch_facts import FULL_SLICES, HAS_INPUT_METADATA, SEED_NODES

from graphwidget.capturing.compat import missing_facts

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "notebooks" / "demo.ipynb"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

pytestmark = pytest.mark.skipif(not (REPO / "graphwidget" / "static" / "widget.js").exists(),
                                reason="widget bundle not built (cd js && npm install && npm run build)")


@pytest.fixture()
def kernel_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """Kernels started from here import this working tree and ignore the user's IPython profile."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    work = tmp_path / "work"
    work.mkdir()
    yield work


def execute(nb: Any, cwd: Path, timeout: int = 120) -> Any:
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def notebook(cells: Sequence[str]) -> Any:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
    return nb


# How a MissingFactWarning (torch 2.4 lacks a fact graphwidget records) reaches a cell: once per kernel, on stderr.
FACT_NOTE = "MissingFactWarning: graphwidget: this torch does not expose "


def is_fact_note(o: Dict[str, Any]) -> bool:
    return o.get("name") == "stderr" and FACT_NOTE in o.get("text", "")


def outputs(cell: Any) -> List[Dict[str, Any]]:
    """A cell's outputs, without the missing-fact notes (checked apart by :func:`fact_notes`), with consecutive
    chunks of one stream joined as a notebook front end shows them: the kernel sends what was written since its
    last flush, so on a busy machine one ``print`` (text, then its newline) can arrive as two stream messages."""
    merged: List[Dict[str, Any]] = []
    for o in cell.get("outputs", []):
        if is_fact_note(o):
            continue
        last = merged[-1] if merged else None
        if last and o["output_type"] == last["output_type"] == "stream" and o["name"] == last["name"]:
            merged[-1] = {**last, "text": last["text"] + o["text"]}
        else:
            merged.append(o)
    return merged


def fact_notes(nb: Any) -> List[str]:
    """The missing-fact notes the notebook showed; each must name a fact this torch lacks, and only once (the kernel
    is one process: the warning is loud once, not on every capture)."""
    notes = [o["text"] for c in nb.cells for o in c.get("outputs", []) if is_fact_note(o)]
    missing = missing_facts()
    for fact in missing:
        assert sum(t.count(FACT_NOTE + fact) for t in notes) <= 1, (fact, notes)
    assert all(any(FACT_NOTE + fact in t for fact in missing) for t in notes), notes
    return notes


def widget_views(nb: Any) -> List[str]:
    """Model ids of the widget views the notebook displayed, in order."""
    return [o["data"][WIDGET_VIEW]["model_id"] for c in nb.cells for o in outputs(c)
            if WIDGET_VIEW in o.get("data", {})]


def widget_state(nb: Any) -> Dict[str, Any]:
    return nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})


def assert_no_errors(nb: Any) -> None:
    fact_notes(nb)
    errors = [o for c in nb.cells for o in outputs(c) if o["output_type"] == "error"]
    assert errors == [], errors
    stderr = [o["text"] for c in nb.cells for o in outputs(c) if o.get("name") == "stderr"]
    assert not [t for t in stderr if "Traceback" in t or "Error" in t], stderr


@pytest.mark.slow
def test_gradgraph_as_last_expression_renders_as_the_widget(kernel_env: Path) -> None:
    nb = execute(notebook([
        "import torch, graphwidget as gw\n"
        "x = torch.randn(4, 3, requires_grad=True)\n"
        "g = gw.capture((x.exp() @ x.T).sum(), title='tiny')\n"
        "g",
        "print(len(g))",
    ]), kernel_env)
    assert_no_errors(nb)
    # a plain capture on a torch without grad_fn._input_metadata says so, in the cell that captured
    assert len([o for o in nb.cells[0]["outputs"] if is_fact_note(o)]) == (0 if HAS_INPUT_METADATA else 1)
    out = outputs(nb.cells[0])
    assert len(out) == 1 and out[0]["output_type"] == "execute_result"
    data = out[0]["data"]
    assert WIDGET_VIEW in data and "text/plain" in data
    model_id = data[WIDGET_VIEW]["model_id"]
    # The view refers to a live anywidget model whose state nbclient recorded.
    state = widget_state(nb)[model_id]
    assert state["model_name"] == "AnyModel"
    assert "_esm" in state["state"]
    assert outputs(nb.cells[1])[0]["text"].strip() == "5"


@pytest.mark.slow  # a real kernel (~4-5 s); tests/test_magics.py runs the magics in-process
def test_magics_in_a_kernel(kernel_env: Path) -> None:
    nb = notebook([
        "%load_ext graphwidget\n"
        "import torch\n"
        "x = torch.randn(5, requires_grad=True)\n"
        "loss = (x.sin() * 2).sum()",
        "%gradgraph loss",
        "%%gradgraph --trace --output y\n"
        "y = x.exp()\n"
        "z = 1",
        "g = %gradgraph --trace (x * 3).sum()\n"
        "print(g.node(0)['op'], g.node(0)['source'], g.node(0)['code'])",
        "%gradgraph nope",
    ])
    nb.cells[-1].metadata["tags"] = ["raises-exception"]  # nbclient runs on past an expected error
    execute(nb, kernel_env)
    for i in (1, 2):
        (out,) = outputs(nb.cells[i])
        assert out["output_type"] == "execute_result" and WIDGET_VIEW in out["data"], out
    assert len(set(widget_views(nb))) == 2
    assert outputs(nb.cells[3])[0]["text"].strip() == "SumBackward0 In[4]:1 (x * 3).sum()"
    # IPython shows a UsageError as a message on stderr, without a traceback.
    (err,) = outputs(nb.cells[4])
    assert err["output_type"] == "stream" and err["name"] == "stderr", err
    assert err["text"].startswith("UsageError: %gradgraph: `nope` is not defined")
    assert "Traceback" not in err["text"]


@pytest.mark.slow  # a shipped notebook top to bottom in a real kernel: ~4-14 s
def test_demo_notebook_runs_top_to_bottom(kernel_env: Path) -> None:
    nb = nbformat.read(str(DEMO), as_version=4)
    params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1, "the demo has one cell tagged 'parameters' (the sizes)"
    params[0].source = "BATCH, HEIGHT, WIDTH = 2, 16, 16"
    execute(nb, kernel_env)
    assert_no_errors(nb)
    # The widget, %gradgraph and %%gradgraph each rendered a view.
    assert len(widget_views(nb)) == 3
    html = [o["data"]["text/html"] for c in nb.cells for o in outputs(c) if "text/html" in o.get("data", {})]
    assert any("gradients backward writes" in h for h in html)
    text = "\n".join(o.get("text", "") for c in nb.cells for o in outputs(c))
    assert "<GradGraph 'repeat'" in text and "<GradGraph 'vectorised'" in text
    assert "graphwidget: wrote select_loop.html" in text
    for name in ("homography_repeat.html", "select_loop.html"):
        assert (kernel_env / name).stat().st_size > 10_000


@pytest.mark.slow  # a shipped notebook top to bottom in a real kernel: ~4-14 s
def test_repeat_vs_broadcast_notebook_runs_top_to_bottom(kernel_env: Path) -> None:
    """notebooks/repeat_vs_broadcast.ipynb: capture -> profile -> compare -> export, committed without outputs."""
    path = REPO / "notebooks" / "repeat_vs_broadcast.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    assert all(not c.get("outputs") and not c.get("execution_count") for c in nb.cells if c.cell_type == "code"), \
        "commit the notebook without outputs (no stale numbers)"
    params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1, "one cell tagged 'parameters' (the sizes)"
    params[0].source = "BATCH, HEIGHT, WIDTH = 2, 16, 16\nREPEAT = 3"
    execute(nb, kernel_env)
    assert_no_errors(nb)
    assert len(widget_views(nb)) == 1  # the DiffWidget
    state = widget_state(nb)[widget_views(nb)[0]]["state"]
    assert state["_anywidget_id"].endswith("DiffWidget")
    text = "\n".join(o.get("text", "") for c in nb.cells for o in outputs(c))
    # selecting on A in Python selected the counterpart on B, and the front end's state has both
    assert f"repeat #{state['selected_a']} <-> broadcast #{state['selected_b']}: changed fields" in text
    m = re.search(r"diff 'repeat' vs 'broadcast': (\d+) nodes matched .*?, (\d+) only in repeat, (\d+) only in broadcast",
                  text)
    assert m, text
    matched, only_a, only_b = map(int, m.groups())
    assert (matched + only_a, matched + only_b) == SEED_NODES
    if not FULL_SLICES:
        assert matched == 47
    assert "same maths: True" in text
    # torch 2.4's full slices (SliceBackward0 of `:`) may be left unmatched; what differs in the maths may not
    only = re.search(r"only in repeat:    (\[.*?\])", text)
    assert only, text
    assert [op for op in ast.literal_eval(only.group(1)) if not (FULL_SLICES and op == "SliceBackward0")] == \
        ["RepeatBackward0", "UnsqueezeBackward0"]
    assert "wrote repeat_vs_broadcast.html" in text
    assert (kernel_env / "repeat_vs_broadcast.html").stat().st_size > 10_000
    html = [o["data"]["text/html"] for c in nb.cells for o in outputs(c) if "text/html" in o.get("data", {})]
    assert any("SelectBackward0" in h for h in html)  # d.by_op() as a table


# -- the advisor's notebooks and %gradgraph --advise ---------------------------------------------------------------
def _run_committed(name: str, params: str, cwd: Path, timeout: int = 600) -> Any:
    """Run notebooks/<name> top to bottom with small sizes; it must be committed without outputs."""
    nb = nbformat.read(str(REPO / "notebooks" / name), as_version=4)
    assert all(not c.get("outputs") and not c.get("execution_count") for c in nb.cells if c.cell_type == "code"), \
        f"commit {name} without outputs (no stale numbers)"
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1, f"{name}: one cell tagged 'parameters' (the sizes)"
    cells[0].source = params
    execute(nb, cwd, timeout=timeout)
    assert_no_errors(nb)
    return nb


def _text(nb: Any) -> str:
    return "\n".join(o.get("text", "") for c in nb.cells for o in outputs(c))


@pytest.mark.slow  # a shipped notebook top to bottom in a real kernel: ~4-14 s
@pytest.mark.timing  # its bmm finding is measured: alone, not beside another worker
def test_memory_layout_notebook_runs_top_to_bottom(kernel_env: Path) -> None:
    nb = _run_committed("memory_layout.ipynb", "BATCH, SIZE, CHANNELS = 8, 32, 3\nROUNDS = 5", kernel_env)
    text = _text(nb)
    assert "contiguous: False | channels_last: True" in text  # a permuted NHWC batch is channels-last
    assert "permuted batch (as is):" in text and "bmm, batch-innermost a:" in text
    assert "1. warning memory-layout at" in text and "ms as captured and" in text
    assert len(widget_views(nb)) == 1  # the bmm graph, with its finding


@pytest.mark.slow  # a shipped notebook top to bottom in a real kernel: ~4-14 s
def test_loop_vs_vectorised_notebook_runs_top_to_bottom(kernel_env: Path) -> None:
    nb = _run_committed("loop_vs_vectorised.ipynb", "N = 64\nREPEAT = 3", kernel_env)
    text = _text(nb)
    assert "1. warning loop-built at" in text
    assert "total = total + (x[:, 0] * x[:, 1]).sum(0)  # one vectorised expression" in text
    assert "same value and gradient" in text and "same maths (float32 rounding)" in text
    assert len(widget_views(nb)) == 2  # the diff and the loop graph


@pytest.mark.slow  # a shipped notebook top to bottom in a real kernel: ~4-14 s
def test_autograd_tour_notebook_runs_top_to_bottom(kernel_env: Path) -> None:
    nb = _run_committed("autograd_tour.ipynb", "SIZE = 4", kernel_env)  # its claims are asserts in its cells
    text = _text(nb)
    assert "Function 'SqrtBackward0' returned nan values" in text
    assert "MulBackward0   graphwidget" in text
    assert len(widget_views(nb)) == 1


@pytest.mark.slow  # a real kernel (~4-5 s); tests/test_advisor_magic.py covers advise in-process
def test_gradgraph_advise_prints_the_findings_under_the_widget(kernel_env: Path) -> None:
    nb = execute(notebook([
        "%load_ext graphwidget\n"
        "import graphwidget as gw\n"
        "inp = gw.examples.homography_inputs(batch=2, height=16, width=16)",
        "%gradgraph --trace --advise gw.examples.homography_repeat(**inp)",
    ]), kernel_env)
    assert_no_errors(nb)
    out = outputs(nb.cells[1])
    assert [o["output_type"] for o in out] == ["execute_result", "stream"], out
    assert WIDGET_VIEW in out[0]["data"]
    assert out[1]["text"].startswith("graphwidget advisor (gw.examples.homography_repeat(**inp)):\n"
                                     "1. warning repeat-broadcast at homography.py:")
