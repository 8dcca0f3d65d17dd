"""``%gradgraph`` / ``%%gradgraph`` through IPython's own test shell, with real torch."""
from __future__ import annotations

import argparse
from typing import Any, Callable

import pytest
import torch
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import graphwidget as gw
from graphwidget.entry.magics import GradGraphMagics, split_options


@pytest.fixture()
def ns(user_ns: Callable[[str], dict]) -> dict:
    """A fresh user namespace with a small graph in it: ``x`` (leaf), ``loss``, and a few non-graph values."""
    return user_ns("import torch, graphwidget as gw\n"
                   "x = torch.randn(5, requires_grad=True)\n"
                   "loss = (x.exp() * 2).sum()\n"
                   "plain = torch.ones(3)\n"
                   "number = 3\n")


def line(ip: InteractiveShell, text: str) -> Any:
    return ip.run_line_magic("gradgraph", text)


def cell(ip: InteractiveShell, options: str, body: str) -> Any:
    return ip.run_cell_magic("gradgraph", options, body)


def same_graph(a: gw.GradGraph, b: gw.GradGraph) -> bool:
    return (sorted(a.nx.nodes) == sorted(b.nx.nodes)
            and [d["op"] for _, d in sorted(a.nx.nodes(data=True))] == [d["op"] for _, d in sorted(b.nx.nodes(data=True))]
            and sorted(a.nx.edges) == sorted(b.nx.edges))


# -- registration -----------------------------------------------------------------------------------------------------
def test_load_ext_registers_line_and_cell_magic(ip: InteractiveShell) -> None:
    magics = ip.magics_manager.magics
    assert "gradgraph" in magics["line"] and "gradgraph" in magics["cell"]
    # The magic's help is the argparse usage (what %gradgraph? shows).
    doc = magics["line"]["gradgraph"].__doc__
    for opt in ("--title", "--html", "--output", "--trace", "--module"):
        assert opt in doc


# -- line magic -------------------------------------------------------------------------------------------------------
def test_line_magic_captures_the_expression(ip: InteractiveShell, ns: dict) -> None:
    g = line(ip, "loss")
    assert isinstance(g, gw.GradGraph)
    assert same_graph(g, gw.capture(ns["loss"]))
    assert g.meta["title"] == "loss"
    assert g.meta["traced"] is False


def test_line_magic_evaluates_any_expression(ip: InteractiveShell, ns: dict) -> None:
    g = line(ip, "(x * x).sum()")
    assert [d["op"] for _, d in sorted(g.nx.nodes(data=True))] == ["SumBackward0", "MulBackward0", "AccumulateGrad"]
    assert g.meta["title"] == "(x * x).sum()"


def test_line_magic_result_is_the_cell_value_and_can_be_assigned(ip: InteractiveShell, ns: dict) -> None:
    res = ip.run_cell("%gradgraph --title 'my graph' loss", store_history=False)
    assert res.error_in_exec is None and isinstance(res.result, gw.GradGraph)
    assert res.result.meta["title"] == "my graph"
    res = ip.run_cell('g = %gradgraph --title="two words" loss', store_history=False)
    assert res.error_in_exec is None and res.result is None
    assert ns["g"].meta["title"] == "two words"


def test_trailing_semicolon_and_dash_dash(ip: InteractiveShell, ns: dict) -> None:
    assert same_graph(line(ip, "loss;"), gw.capture(ns["loss"]))
    g = line(ip, "-- -loss")  # an expression that starts with "-"
    assert g.node(g.meta["roots"][0])["op"] == "NegBackward0"
    g = line(ip, "-- -x.sum()")
    assert g.node(g.meta["roots"][0])["op"] == "NegBackward0"


def test_trailing_comments_as_pasted_from_the_readme(ip: InteractiveShell, ns: dict, tmp_path: Any) -> None:
    """A ``#`` outside quotes starts a comment, on the magic's line as in any IPython line; it is not Python source,
    a title or an option."""
    res = ip.run_cell("%gradgraph loss   # show the graph of a tensor expression", store_history=False)
    assert res.error_in_exec is None, res.error_in_exec
    assert res.result.meta["title"] == "loss" and same_graph(res.result, gw.capture(ns["loss"]))
    res = ip.run_cell("g = %gradgraph --title 'a # b' (x * 2).sum()  # doubled", store_history=False)
    assert res.error_in_exec is None, res.error_in_exec
    assert ns["g"].meta["title"] == "a # b"
    assert [d["op"] for _, d in sorted(ns["g"].nx.nodes(data=True))] == ["SumBackward0", "MulBackward0",
                                                                          "AccumulateGrad"]
    assert line(ip, "--trace x['#'.count('#')].exp()  # a '#' inside a string stays").meta["title"] == \
        "x['#'.count('#')].exp()"
    html = tmp_path / "graph.html"
    res = ip.run_cell(f"%%gradgraph --output loss2 --html {html}     # run the cell, show the graph of `loss2`\n"
                      "loss2 = (x * 3).sum()\n", store_history=False)
    assert res.error_in_exec is None, res.error_in_exec
    assert res.result.meta["title"] == "loss2" and html.stat().st_size > 1000
    res = ip.run_cell("%%gradgraph  # the last expression\n(x + 1).sum()\n", store_history=False)
    assert res.error_in_exec is None, res.error_in_exec
    assert res.result.node(res.result.meta["roots"][0])["op"] == "SumBackward0"
    with pytest.raises(UsageError, match="needs a value"):
        line(ip, "--title # no title given")


def test_several_tensors_are_several_roots(ip: InteractiveShell, ns: dict) -> None:
    g = line(ip, "(loss, x * 3)")
    assert len(g.meta["roots"]) == 2
    g = line(ip, "{'a': loss, 'ignored': plain}")  # tensors without a graph in a collection are skipped
    assert len(g.meta["roots"]) == 1


def test_module_option_names_parameters(ip: InteractiveShell, ns: dict) -> None:
    ip.run_cell("net = torch.nn.Linear(3, 2)\nout = net(torch.randn(4, 3)).sum()", store_history=False)
    g = line(ip, "--module net out")
    names = {d["tensor"]["name"] for _, d in g.nx.nodes(data=True) if d["kind"] == "leaf"}
    assert names == {"weight", "bias"}


def test_line_trace_attributes_nodes_to_the_magic_line(ip: InteractiveShell, ns: dict) -> None:
    g = line(ip, "--trace (x.sin() * 3).sum()")
    assert g.meta["traced"] is True
    label = f"In[{ip.execution_count}]:1"
    by_op = {d["op"]: d for _, d in g.nx.nodes(data=True)}
    for op in ("SumBackward0", "MulBackward0", "SinBackward0"):
        assert by_op[op]["source"] == label
        assert by_op[op]["code"] == "(x.sin() * 3).sum()"
    assert by_op["AccumulateGrad"]["source"] is None
    # Like gw.trace, the traced value stays reachable (to call backward on).
    g.output.backward()
    assert ns["x"].grad is not None


def test_trace_reaches_into_user_functions(ip: InteractiveShell, ns: dict) -> None:
    inp = gw.examples.homography_inputs(batch=2, height=8, width=8)
    ns["inp"] = inp
    g = line(ip, "-t gw.examples.homography_repeat(**inp)")
    reference = gw.trace(gw.examples.homography_repeat, **inp)
    assert same_graph(g, reference)
    # Nodes are attributed to the lines of examples.py, exactly as gw.trace does.
    assert [d["source"] for _, d in sorted(g.nx.nodes(data=True))] == \
        [d["source"] for _, d in sorted(reference.nx.nodes(data=True))]
    assert any(d["code"] == "h = homo.unsqueeze(1).repeat(1, W * H, 1, 1)" for _, d in g.nx.nodes(data=True))


# -- cell magic -------------------------------------------------------------------------------------------------------
def test_cell_magic_captures_the_last_expression(ip: InteractiveShell, ns: dict) -> None:
    g = cell(ip, "", "y = x * 4\nz = y.exp()\nz.sum()\n")
    assert [d["op"] for _, d in sorted(g.nx.nodes(data=True))] == \
        ["SumBackward0", "ExpBackward0", "MulBackward0", "AccumulateGrad"]
    assert g.meta["title"] == "z.sum()"
    assert "y" in ns and "z" in ns  # the cell ran in the user namespace


def test_cell_magic_output_option(ip: InteractiveShell, ns: dict) -> None:
    g = cell(ip, "--output l2 --title 'L2'", "l2 = (x ** 2).sum()\nunused = 1\n")
    assert g.meta["title"] == "L2"
    assert g.node(g.meta["roots"][0])["op"] == "SumBackward0"
    g = cell(ip, "-o l3", "l3 = x.sum()\nx.mean()  # a last expression does not override --output\n")
    assert g.meta["title"] == "l3"
    assert g.node(g.meta["roots"][0])["op"] == "SumBackward0"


def test_cell_trace_sources_match_the_cell_as_shown(ip: InteractiveShell, ns: dict) -> None:
    body = ("h = x.unsqueeze(0)\n"
            "h = h.repeat(4, 1)\n"
            "# a comment line\n"
            "total = h.square().sum()\n"
            "total\n")
    g = cell(ip, "--trace", body)
    assert g.meta["traced"] is True
    n = ip.execution_count
    by_op = {d["op"]: d for _, d in g.nx.nodes(data=True)}
    # Line 1 of the cell is the %%gradgraph line, so the body starts at line 2.
    assert by_op["UnsqueezeBackward0"]["source"] == f"In[{n}]:2"
    assert by_op["UnsqueezeBackward0"]["code"] == "h = x.unsqueeze(0)"
    assert by_op["RepeatBackward0"]["source"] == f"In[{n}]:3"
    assert by_op["PowBackward0"]["source"] == f"In[{n}]:5"
    assert by_op["SumBackward0"]["code"] == "total = h.square().sum()"


def test_cell_trace_select_loop_collapses_to_one_line(ip: InteractiveShell, ns: dict) -> None:
    body = ("v = torch.randn(16, 4, requires_grad=True)\n"
            "acc = v[0].sum() * 0\n"
            "for i in range(16):\n"
            "    acc = acc + v[i, 0] * v[i, 1]\n"
            "acc\n")
    g = cell(ip, "-t", body)
    selects = [d for _, d in g.nx.nodes(data=True) if d["op"] == "SelectBackward0" and d["code"] != "acc = v[0].sum() * 0"]
    assert len(selects) == 64  # v[i, 0] is two selects (row, then column), twice per iteration
    assert {d["code"] for d in selects} == {"acc = acc + v[i, 0] * v[i, 1]"}


def test_errors_in_the_cell_propagate_and_the_recorder_is_removed(ip: InteractiveShell, ns: dict) -> None:
    apply_before = torch.autograd.Function.__dict__["apply"]
    with pytest.raises(ZeroDivisionError):
        cell(ip, "--trace", "y = x * 2\n1 / 0\n")
    assert torch._C._len_torch_function_stack() == 0
    assert torch.autograd.Function.__dict__["apply"] is apply_before
    with pytest.raises(RuntimeError):
        line(ip, "--trace torch.ones(2, 3) @ torch.ones(2, 3)")
    assert torch._C._len_torch_function_stack() == 0


# -- misuse: UsageErrors that say what to write --------------------------------------------------------------------------
@pytest.mark.parametrize("text, says", [
    ("", "%gradgraph loss"),
    ("   ", "%gradgraph loss"),
    ("--bogus loss", "--bogus"),
    ("-q loss", "-q"),
    ("-x", "write `--` before an expression"),
    ("nope", "`nope` is not defined"),
    ("number", "is an int, not a tensor"),
    ("'text'", "not a tensor"),
    ("None", "`None` is a NoneType, not a tensor"),
    ("plain", "does not require grad"),
    ("[plain, number]", "no tensor that requires grad"),
    ("loss --title a", "Options go before the expression"),
    ("--output loss", "--output NAME is for the cell magic"),
    ("--title", "--title needs a value"),
    ("--module number loss", "not a torch.nn.Module"),
    ("--module undefined_thing loss", "could not evaluate"),
    ("--title 'unclosed loss", "unmatched"),
    ("--tit x loss", "--tit"),  # no silent abbreviations
])
def test_line_usage_errors(ip: InteractiveShell, ns: dict, text: str, says: str) -> None:
    with pytest.raises(UsageError) as err:
        line(ip, text)
    assert says in str(err.value)
    assert "usage: %gradgraph" in str(err.value)


def test_usage_error_names_the_tensors_you_could_mean(ip: InteractiveShell, ns: dict) -> None:
    with pytest.raises(UsageError, match=r"require grad in your namespace: loss, x"):
        line(ip, "lsos")


def test_tensor_made_under_no_grad_or_inference_mode(ip: InteractiveShell, ns: dict) -> None:
    ip.run_cell("with torch.no_grad():\n    ng = x * 2\nwith torch.inference_mode():\n    inf = x * 2",
                store_history=False)
    with pytest.raises(UsageError, match="torch.no_grad"):
        line(ip, "ng")
    with pytest.raises(UsageError, match="inference_mode"):
        line(ip, "inf")


def test_gradgraph_of_a_gradgraph(ip: InteractiveShell, ns: dict) -> None:
    ns["gg"] = gw.capture(ns["loss"])
    with pytest.raises(UsageError, match="already a GradGraph"):
        line(ip, "gg")


@pytest.mark.parametrize("options, body, says", [
    ("", "y = x * 2\n", "does not end with an expression"),
    ("--output missing", "y = x * 2\n", "did not define `missing`"),
    ("loss", "y = x * 2\n", "`%%gradgraph --output loss`"),
    ("", "y = x * 2\nnumber\n", "`number` is an int"),
    ("--output number", "y = 1\n", "`number` is an int"),
    ("--bogus", "x.sum()\n", "--bogus"),
])
def test_cell_usage_errors(ip: InteractiveShell, ns: dict, options: str, body: str, says: str) -> None:
    with pytest.raises(UsageError) as err:
        cell(ip, options, body)
    assert says in str(err.value)


def test_usage_error_shows_as_a_message_in_a_cell(ip: InteractiveShell, ns: dict, capsys: Any) -> None:
    res = ip.run_cell("%gradgraph", store_history=False)
    assert isinstance(res.error_in_exec, UsageError)
    out = capsys.readouterr()
    text = out.out + out.err
    assert "UsageError" in text and "%gradgraph loss" in text
    assert "Traceback" not in text  # IPython shows UsageErrors without a traceback


# -- option scanning --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, words, rest", [
    ("loss", [], "loss"),
    ("--trace loss", ["--trace"], "loss"),
    ("--title 'a b' --html out.html f(x)[\"k\"]", ["--title", "a b", "--html", "out.html"], 'f(x)["k"]'),
    ("--title=\"a b\" loss", ["--title=a b"], "loss"),
    ("-t -o y", ["-t", "-o", "y"], ""),
    ("-- -x.sum()", [], "-x.sum()"),
    ("-x.sum()", [], "-x.sum()"),
    ("--title -- x", ["--title", "--"], "x"),  # a value is taken as is
    ("  model(x) --trace", [], "model(x) --trace"),
    ("loss   # a comment", [], "loss"),
    ("--trace # a comment", ["--trace"], ""),
    ("--html a#b.html loss", ["--html", "a#b.html"], "loss"),
    ("--title '#1' f('#')  # c", ["--title", "#1"], "f('#')"),
])
def test_split_options(text: str, words: list, rest: str) -> None:
    assert split_options(text, GradGraphMagics.parser) == (words, rest)
    assert isinstance(GradGraphMagics.parser, argparse.ArgumentParser)


# -- --html and rich display (need the front end: graphwidget.export / graphwidget.widget) ---------------------------------
def test_html_option_writes_the_viewer(ip: InteractiveShell, ns: dict, tmp_path: Any, capsys: Any) -> None:
    pass
    path = tmp_path / "loss.html"
    g = line(ip, f"--html {path} loss")
    assert isinstance(g, gw.GradGraph)
    assert path.exists() and path.stat().st_size > 1000
    assert "wrote" in capsys.readouterr().out
    path2 = tmp_path / "cell graph.html"
    cell(ip, f"--html '{path2}' --output s", "s = x.sum()\n")
    assert path2.exists()


def test_magic_result_displays_as_the_widget(ip: InteractiveShell, ns: dict) -> None:
    pass
    g = line(ip, "loss")
    data, _ = ip.display_formatter.format(g)
    assert "application/vnd.jupyter.widget-view+json" in data


def test_gw_trace_in_a_cell_names_the_cells_that_made_each_node(ip: InteractiveShell, ns: dict) -> None:
    """Plain ``gw.trace`` (no magic) of a function defined in an earlier cell: each node says ``In[N]:line`` of the
    cell whose line made it, as IPython's tracebacks do, not the kernel's opaque cache file name."""
    ip.run_cell("def f(t):\n"
                "    u = t.exp()\n"
                "    return (u * 2).sum()\n", store_history=True)
    defined = ip.execution_count - 1  # IPython counts up once a stored cell has run
    ip.run_cell("g = gw.trace(f, x)\n", store_history=True)
    traced = ip.execution_count - 1
    assert traced == defined + 1
    g = ns["g"]
    by_op = {d["op"]: d for _, d in g.nx.nodes(data=True)}
    assert by_op["ExpBackward0"]["source"] == f"In[{defined}]:2" and by_op["ExpBackward0"]["code"] == "u = t.exp()"
    assert by_op["SumBackward0"]["source"] == f"In[{defined}]:3"
    # a function from a real file keeps its path
    from graphwidget import examples as ex
    g2 = gw.trace(ex.homography_repeat, **ex.homography_inputs(batch=1, height=4, width=4))
    assert all(d["source"].startswith(ex.homography.__file__) for _, d in g2.nx.nodes(data=True) if d["source"])
