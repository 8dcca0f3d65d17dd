"""IPython magics: ``%gradgraph EXPR`` and ``%%gradgraph`` (and ``%gradcompare``: :mod:`.gradcompare`).

Load with ``%load_ext graphwidget``; then::

    %gradgraph loss                       # capture loss's autograd graph and show it as the widget
    %gradgraph --trace model(x).sum()     # run EXPR under the recorder: nodes get source lines and module paths
    g = %gradgraph --title "step 3" loss  # the magic returns the GradGraph

    %%gradgraph --trace --html graph.html
    y = model(x)
    loss = y.square().mean()
    loss                                  # the cell's last expression is captured (or: --output loss)

Options go before the expression (``--`` ends them, for an expression that starts with ``-``). A ``#`` outside
quotes starts a comment, on the magic's line as on any other:

``--title TITLE``   title of the graph (default: the expression, or the ``--output`` name);
``--html PATH``     also write the self-contained HTML viewer to ``PATH``;
``--output NAME``   ``%%gradgraph`` only: capture the variable ``NAME`` the cell defines;
``--trace``         record where each node was created (``gw.trace`` semantics);
``--module EXPR``   an ``nn.Module`` whose names label the leaf parameters (``fc1.weight``);
``--advise``        run the advisor (``GradGraph.advise``) and print its findings under the widget.

Misuse (no expression, unknown option, undefined ``--output`` name, a value that is not a tensor requiring grad)
raises :class:`IPython.core.error.UsageError` with a message saying what to write instead.
"""
from __future__ import annotations

import argparse
import ast
import builtins
import io
import keyword
import re
import tokenize
from typing import Any, Dict, List, Mapping, Optional, Tuple

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from ..model.graph import GradGraph

__all__ = ["GradGraphMagics", "register", "split_options"]

_USAGE = ("usage: %gradgraph [--title TITLE] [--html PATH] [--trace] [--module EXPR] [--advise] EXPR\n"
          "       %%gradgraph [--title TITLE] [--html PATH] [--trace] [--module EXPR] [--advise] [--output NAME]"
          "  (then the cell)")

# An option token: "-o" / "--title" / "--title=..." (followed by space, "=" or the end). "-x.sum()" is not one.
_OPTION = re.compile(r"(?:--[A-Za-z][\w-]*|-[A-Za-z])(?==|\s|$)")


def _usage_error(message: str) -> UsageError:
    return UsageError(f"{message}\n{_USAGE}")


def _read_word(line: str, pos: int) -> Tuple[str, int]:
    """One shell-like word starting at ``pos`` (quotes group and are removed); returns it and the end position."""
    out: List[str] = []
    n = len(line)
    while pos < n and not line[pos].isspace():
        ch = line[pos]
        if ch in "\"'":
            end = line.find(ch, pos + 1)
            if end < 0:
                raise _usage_error(f"%gradgraph: unmatched {ch} in the options: {line!r}")
            out.append(line[pos + 1:end])
            pos = end + 1
        else:
            out.append(ch)
            pos += 1
    return "".join(out), pos


def _value_options(parser: argparse.ArgumentParser) -> frozenset:
    return frozenset(s for a in parser._actions if a.option_strings and a.nargs != 0 for s in a.option_strings)


def split_options(line: str, parser: argparse.ArgumentParser) -> Tuple[List[str], str]:
    """Split a magic's line into its leading option words and the rest, kept verbatim (it is Python source).

    >>> split_options('--title "a b" -- -x.sum()', GradGraphMagics.parser)
    (['--title', 'a b'], '-x.sum()')
    """
    takes_value = _value_options(parser)
    words: List[str] = []
    pos, n = 0, len(line)
    want_value = False
    while True:
        while pos < n and line[pos].isspace():
            pos += 1
        if pos >= n or line[pos] == "#":
            break  # a "#" starting a word (outside quotes) starts a comment, as in the shell and in Python
        if not want_value:
            if line.startswith("--", pos) and (pos + 2 == n or line[pos + 2].isspace()):
                pos += 2  # "--": the expression follows, even if it starts with "-"
                break
            if not _OPTION.match(line, pos):
                break
        word, pos = _read_word(line, pos)
        words.append(word)
        want_value = not want_value and word in takes_value
    if want_value:
        raise _usage_error(f"%gradgraph: option {words[-1]} needs a value, e.g. {words[-1]} {_example(words[-1])}")
    return words, _without_comment(line[pos:]).strip()


def _without_comment(source: str) -> str:
    """``source`` without its trailing Python comment (a ``#`` outside string literals), as IPython users paste it.

    Source Python cannot tokenize is returned unchanged, so that compiling it reports the real error."""
    if "#" not in source:
        return source
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                return source[:tok.start[1]] if tok.start[0] == 1 else source
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return source


def _example(option: str) -> str:
    return {"--title": '"my graph"', "--html": "graph.html", "--output": "loss", "-o": "loss",
            "--module": "model", "-m": "model"}.get(option, "VALUE")


def _a(value: Any) -> str:
    """``"an int"``, ``"a list"``: the value's type name with its article."""
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _grad_tensor_names(ns: Mapping[str, Any]) -> List[str]:
    """Names in the namespace bound to tensors that carry a graph (suggestions for error messages)."""
    import torch
    return sorted(k for k, v in ns.items()
                  if not k.startswith("_") and isinstance(v, torch.Tensor) and v.requires_grad)


def _hint(ns: Mapping[str, Any]) -> str:
    names = _grad_tensor_names(ns)
    if not names:
        return ""
    shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
    return f" Tensors that require grad in your namespace: {shown}."


def _check_value(value: Any, what: str, ns: Mapping[str, Any]) -> Any:
    """What to hand to ``capture``: the value's graph-carrying tensors (one, or a list), or a grad_fn node.

    Raises UsageError saying what to write when ``value`` has no graph."""
    import torch

    from ..capturing.roots import grad_tensors

    if isinstance(value, torch.Tensor):
        if value.requires_grad:
            return value
        if torch.is_inference(value):
            why = "it was created under torch.inference_mode()"
        else:
            why = ("it was computed under torch.no_grad() or from inputs that do not require grad; make an input "
                   "require grad (x.requires_grad_()) and recompute it")
        raise _usage_error(f"%gradgraph: {what} is a tensor that does not require grad, so it has no autograd "
                           f"graph: {why}.{_hint(ns)}")
    if hasattr(value, "next_functions"):  # a grad_fn node
        return value
    if isinstance(value, (list, tuple, dict)):
        roots = grad_tensors(value)
        if roots:
            return roots if len(roots) > 1 else roots[0]
        raise _usage_error(f"%gradgraph: {what} is {_a(value)} with no tensor that requires grad."
                           f"{_hint(ns)}")
    if isinstance(value, GradGraph):
        raise _usage_error(f"%gradgraph: {what} is already a GradGraph; display it directly (make it the last "
                           f"line of the cell) or pass the tensor it was captured from.")
    raise _usage_error(f"%gradgraph: {what} is {_a(value)}, not a tensor. Pass the tensor you would "
                       f"call .backward() on, e.g. `%gradgraph loss`.{_hint(ns)}")


@magics_class
class GradGraphMagics(Magics):
    """The ``%gradgraph`` line magic and ``%%gradgraph`` cell magic (see the module docstring)."""

    parser: argparse.ArgumentParser  # set below, after the class is built

    @line_cell_magic
    @magic_arguments()
    @argument("--title", metavar="TITLE", help="Title of the graph (default: the expression or --output name).")
    @argument("--html", metavar="PATH", help="Also write the self-contained HTML viewer to PATH.")
    @argument("-o", "--output", metavar="NAME",
              help="Cell magic only: capture the variable NAME the cell defines instead of its last expression.")
    @argument("-t", "--trace", action="store_true",
              help="Record where each node was created (source line, code, nn.Module path), like gw.trace.")
    @argument("-m", "--module", metavar="EXPR", help="An nn.Module whose parameter names label the leaves.")
    @argument("-a", "--advise", action="store_true",
              help="Run the advisor on the graph and print its findings under the widget (see GradGraph.advise).")
    @argument("expression", nargs="*",
              help="Line magic: the Python expression whose graph to capture (the rest of the line, after the "
                   "options; write `--` before an expression that starts with `-`).")
    def gradgraph(self, line: str = "", cell: Optional[str] = None) -> GradGraph:
        """Capture an autograd graph and show it as the interactive widget.

        ``%gradgraph EXPR`` evaluates EXPR in your namespace and captures the graph of the tensor it returns.
        ``%%gradgraph`` runs the cell and captures its last expression (or the variable ``--output NAME``).
        Returns the :class:`graphwidget.GradGraph`, which renders as the widget when it ends the cell.
        """
        words, rest = split_options(line, self.parser)
        try:
            args = self.parser.parse_args(words)  # MagicArgumentParser: bad options raise UsageError
        except UsageError as exc:
            raise _usage_error(f"%gradgraph: {exc}. Known options: --title, --html, --output, --trace, --module, "
                               f"--advise; "
                               f"write `--` before an expression that starts with `-`.") from None
        ns: Dict[str, Any] = self.shell.user_ns
        module = self._module(args.module, ns)
        if cell is None:
            return self._line(args, rest.rstrip(";").strip(), module, ns)
        if rest:
            raise _usage_error(
                f"%%gradgraph: unexpected {rest!r} after the options. End the cell with the tensor to capture, "
                f"or name it: `%%gradgraph --output {rest.split()[0] if rest.split()[0].isidentifier() else 'loss'}`.")
        return self._cell(args, line, cell, module, ns)

    # -- the two forms --------------------------------------------------------------------------------------------
    def _line(self, args: argparse.Namespace, expr: str, module: Any, ns: Dict[str, Any]) -> GradGraph:
        if args.output:
            raise _usage_error("%gradgraph: --output NAME is for the cell magic %%gradgraph; on one line write "
                               f"`%gradgraph {args.output}`.")
        if not expr:
            raise _usage_error("%gradgraph needs an expression: write `%gradgraph loss` (the tensor you would call "
                               ".backward() on), or use %%gradgraph on a cell that ends with it." + _hint(ns))
        if (expr.isidentifier() and not keyword.iskeyword(expr) and expr not in ns
                and not hasattr(builtins, expr)):
            raise _usage_error(f"%gradgraph: `{expr}` is not defined; run the cell that defines it first."
                               + _hint(ns))
        try:
            tree = self.shell.compile.ast_parse(expr, symbol="eval")
        except SyntaxError as exc:
            raise _usage_error(f"%gradgraph: `{expr}` is not a Python expression ({exc.msg}). Options go before "
                               f"the expression: `%gradgraph --title T loss`.") from None
        filename = self._cache(expr)
        code = self.shell.compile(tree, filename, "eval")
        title = args.title if args.title is not None else expr
        if not args.trace:
            value = eval(code, ns)
            return self._finish(args, self._capture(value, f"`{expr}`", module, title, ns))
        from ..attribution.recorder import Recorder
        rec = Recorder()
        with rec:
            value = eval(code, ns)
        return self._finish(args, self._traced(rec, value, f"`{expr}`", module, title, ns))

    def _cell(self, args: argparse.Namespace, line: str, cell: str, module: Any, ns: Dict[str, Any]) -> GradGraph:
        source = self.shell.transform_cell(cell)
        tree = self.shell.compile.ast_parse(source)
        tree = self.shell.transform_ast(tree)
        # Cache the cell as the user sees it (magic line first), so line numbers and code text match the notebook.
        filename = self._cache(f"%%gradgraph {line}\n{source}")
        ast.increment_lineno(tree, 1)
        last: Optional[ast.expr] = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = tree.body.pop().value
        if args.output is not None:
            what, title = f"`{args.output}`", args.output
        elif last is not None:
            text = ast.get_source_segment(f"\n{source}", last) or "the cell's last expression"
            what, title = f"`{text}`", text
        else:
            raise _usage_error("%%gradgraph: the cell does not end with an expression. End it with the tensor to "
                               "capture (e.g. a last line `loss`) or name it: `%%gradgraph --output loss`."
                               + _hint(ns))
        if args.title is not None:
            title = args.title
        rec = None
        if args.trace:
            from ..attribution.recorder import Recorder
            rec = Recorder()
            rec.__enter__()
        try:
            exec(self.shell.compile(tree, filename, "exec"), ns)
            value = None
            if last is not None:
                value = eval(self.shell.compile(ast.Expression(last), filename, "eval"), ns)
        finally:
            if rec is not None:
                rec.__exit__(None, None, None)
        if args.output is not None:
            if args.output not in ns:
                raise _usage_error(f"%%gradgraph --output {args.output}: the cell did not define "
                                   f"`{args.output}`. Name a variable the cell assigns, or drop --output and end "
                                   f"the cell with the expression." + _hint(ns))
            value = ns[args.output]
        if rec is None:
            return self._finish(args, self._capture(value, what, module, title, ns))
        return self._finish(args, self._traced(rec, value, what, module, title, ns))

    # -- helpers --------------------------------------------------------------------------------------------------
    def _module(self, expr: Optional[str], ns: Dict[str, Any]) -> Any:
        if expr is None:
            return None
        import torch
        try:
            module = eval(expr, ns)
        except Exception as exc:  # noqa: BLE001 - any failure means the option is wrong
            raise _usage_error(f"%gradgraph --module {expr}: could not evaluate it ({type(exc).__name__}: {exc}). "
                               f"Pass the nn.Module that owns the parameters, e.g. --module model.") from None
        if not isinstance(module, torch.nn.Module):
            raise _usage_error(f"%gradgraph --module {expr}: that is {_a(module)}, not a "
                               f"torch.nn.Module. Pass the model, e.g. --module model.")
        return module

    def _cell_number(self) -> int:
        """The number of the cell running now (the N of ``In[N]``).

        IPython counts ``execution_count`` up when a cell *starts*, so during the cell it is already N + 1; the
        running cell's own number is on its ExecutionResult. Outside a cell (``run_line_magic`` from code) this
        falls back to the counter."""
        result = getattr(getattr(self.shell, "displayhook", None), "exec_result", None)
        number = getattr(result, "execution_count", None)
        return int(number) if number is not None else int(self.shell.execution_count)

    def _cache(self, source: str) -> str:
        """Register ``source`` in linecache (tracebacks and traced ``code`` read it) and return its file name."""
        return self.shell.compile.cache(source, self._cell_number())

    def _capture(self, value: Any, what: str, module: Any, title: str, ns: Dict[str, Any]) -> GradGraph:
        from ..capturing.api import capture
        return capture(_check_value(value, what, ns), module=module, title=title)

    def _traced(self, rec: Any, value: Any, what: str, module: Any, title: str, ns: Dict[str, Any]) -> GradGraph:
        from ..attribution.attach import attributed_capture
        _check_value(value, what, ns)
        # The cell's lines were cached under its In[N] (_cache): the recorder names them "In[N]:line" itself.
        return attributed_capture(rec, value, module=module, title=title, who="%gradgraph")

    def _finish(self, args: argparse.Namespace, graph: GradGraph) -> GradGraph:
        if getattr(args, "advise", False):
            self._advise(graph)  # first: the findings travel with the graph into the --html export
        if args.html:
            path = graph.export_html(args.html)
            print(f"graphwidget: wrote {path if path is not None else args.html}")
        return graph

    def _advise(self, graph: GradGraph) -> None:
        """``--advise``: compute the findings now (they travel with the graph) and print them under the widget.

        The widget is the cell's result, displayed when the cell's last line runs; text printed here would land
        above it. So inside a cell the text is printed from IPython's ``post_execute`` event, after the result."""
        from ..analysis.advisor import format_findings
        findings = graph.advise()
        title = graph.meta.get("title")
        text = format_findings(findings, f"graphwidget advisor{f' ({title})' if title else ''}:")
        shell = self.shell
        if getattr(getattr(shell, "displayhook", None), "exec_result", None) is None:
            print(text)  # not inside a running cell (run_line_magic from code): nothing to wait for
            return

        def show(*_: Any) -> None:
            shell.events.unregister("post_execute", show)
            print(text)
        shell.events.register("post_execute", show)


GradGraphMagics.parser = GradGraphMagics.gradgraph.parser  # type: ignore[attr-defined]
GradGraphMagics.parser.allow_abbrev = False  # "--tit" must not silently mean --title: options are scanned by name


def register(ipython: Any) -> None:
    """Register the magics on an IPython shell (what ``%load_ext graphwidget`` calls): ``%gradgraph`` here and
    ``%gradcompare`` (:mod:`graphwidget.views.gradcompare`)."""
    from .gradcompare import GradCompareMagics
    ipython.register_magics(GradGraphMagics)
    ipython.register_magics(GradCompareMagics)
