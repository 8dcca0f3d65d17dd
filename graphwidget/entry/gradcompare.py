"""``%gradcompare FN_A FN_B ARG... [--labels a,b] [--profile] [--repeat N] [--html PATH]``: :func:`graphwidget.compare`
from a notebook line (registered by ``%load_ext graphwidget`` with ``%gradgraph``).

Each word is a Python expression evaluated in your namespace: the two functions (or modules), then the inputs —
``x`` (positional), ``name=expr`` (keyword), ``*xs`` and ``**inputs`` (unpacked). Words are split on spaces outside
brackets and quotes, so ``torch.randn(2, 3)`` is one word. Options may come anywhere. The magic returns the
:class:`~graphwidget.Diff`, which shows as the side-by-side view when it ends the cell::

    %gradcompare gw.examples.homography_repeat gw.examples.homography_broadcast **inputs --labels repeat,broadcast
    d = %gradcompare model_v1 model_v2 x --profile

Misuse (missing functions, names that are not defined, an argument that does not evaluate, bad options, inputs
that need no grad) raises :class:`IPython.core.error.UsageError` saying what to write instead; an exception raised
inside one of the functions propagates with its traceback (it says which side).
"""
from __future__ import annotations

import keyword
from collections.abc import Mapping
from typing import Any, Dict, List, Optional, Tuple

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class

__all__ = ["GradCompareMagics", "split_words"]

USAGE = ("usage: %gradcompare FN_A FN_B ARG... [--labels A,B] [--profile] [--repeat N] [--html PATH]\n"
         "       ARG: expr | name=expr | *expr | **expr   e.g. %gradcompare f g x w --labels loop,vectorised")
_FLAGS = ("--profile",)
_VALUES = ("--labels", "--repeat", "--html")


def _error(message: str) -> UsageError:
    return UsageError(f"%gradcompare: {message}\n{USAGE}")


def split_words(line: str) -> List[str]:
    """Split on whitespace outside brackets and quotes (quotes are kept: a word is Python source).

    >>> split_words("f g torch.randn(2, 3) name='a b' --labels x,y")
    ['f', 'g', 'torch.randn(2, 3)', "name='a b'", '--labels', 'x,y']
    """
    words: List[str] = []
    cur: List[str] = []
    depth = 0
    quote: Optional[str] = None
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if quote:
            cur.append(ch)
            if ch == "\\" and i + 1 < n:
                cur.append(line[i + 1])
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
            cur.append(ch)
        elif ch in "([{":
            depth += 1
            cur.append(ch)
        elif ch in ")]}":
            depth -= 1
            cur.append(ch)
        elif ch.isspace() and depth <= 0:
            if cur:
                words.append("".join(cur))
                cur = []
        else:
            cur.append(ch)
        i += 1
    if quote:
        raise _error(f"unmatched {quote} in {line!r}.")
    if depth > 0:
        raise _error(f"unclosed bracket in {line!r}.")
    if cur:
        words.append("".join(cur))
    return words


def parse(line: str) -> Tuple[List[str], Dict[str, Any]]:
    """The positional words and the options (``labels``, ``profile``, ``repeat``, ``html``)."""
    words = split_words(line)
    pos: List[str] = []
    opts: Dict[str, Any] = {"labels": None, "profile": False, "repeat": 5, "html": None}
    i = 0
    only_args = False
    while i < len(words):
        w = words[i]
        i += 1
        if only_args or not w.startswith("--"):
            pos.append(w)
            continue
        if w == "--":
            only_args = True
            continue
        name, eq, value = w.partition("=")
        if name in _FLAGS:
            if eq:
                raise _error(f"{name} takes no value.")
            opts[name[2:]] = True
        elif name in _VALUES:
            if not eq:
                if i >= len(words):
                    raise _error(f"{name} needs a value, e.g. {name} {_EXAMPLE[name]}.")
                value = words[i]
                i += 1
            opts[name[2:]] = value.strip("\"'")
        else:
            raise _error(f"unknown option {name}. Known options: {', '.join(_FLAGS + _VALUES)}; write `--` before "
                         f"arguments that start with `--`.")
    return pos, opts


_EXAMPLE = {"--labels": "repeat,broadcast", "--repeat": "5", "--html": "diff.html"}


@magics_class
class GradCompareMagics(Magics):
    """The ``%gradcompare`` line magic (see the module docstring)."""

    @line_magic
    def gradcompare(self, line: str = "") -> Any:
        """Compare two implementations: ``%gradcompare FN_A FN_B ARG... [--labels A,B] [--profile] [--repeat N]
        [--html PATH]``. Runs ``gw.compare(FN_A, FN_B, *ARGS, **KWARGS)`` and returns the Diff (shown as the
        side-by-side view): the nodes matched, added and removed, whether outputs and gradients match and, with
        ``--profile``, the backward times measured interleaved."""
        ns: Dict[str, Any] = self.shell.user_ns
        pos, opts = parse(line)
        if len(pos) < 2:
            raise _error("needs two functions (or modules) to compare, then their inputs, e.g. "
                         "`%gradcompare f_old f_new x`.")
        fn_a, fn_b = (self._function(w, ns, side) for w, side in zip(pos[:2], "AB"))
        args, kwargs = self._arguments(pos[2:], ns)
        labels = self._labels(opts["labels"], pos[:2])
        try:
            repeat = int(opts["repeat"])
        except ValueError:
            raise _error(f"--repeat {opts['repeat']!r}: write a whole number of instrumented rounds, e.g. "
                         f"--repeat 5.") from None
        from ..experiment.compare import compare_two
        try:
            d = compare_two(fn_a, fn_b, *args, labels=labels, profile=opts["profile"], repeat=repeat, **kwargs)
        except (TypeError, ValueError) as exc:  # our own argument checks: say them without a traceback
            raise _error(str(exc).replace("graphwidget.compare: ", "")) from None
        print(d.sentence())  # the one line to paste into a pull request, above the view
        if opts["html"]:
            path = d.export_html(opts["html"])
            print(f"graphwidget: wrote {path}")
        return d

    # -- helpers --------------------------------------------------------------------------------------------------
    def _eval(self, expr: str, ns: Dict[str, Any], what: str) -> Any:
        if expr.isidentifier() and not keyword.iskeyword(expr) and expr not in ns:
            import builtins
            if not hasattr(builtins, expr):
                raise _error(f"{what} `{expr}` is not defined; run the cell that defines it first.")
        try:
            return eval(expr, ns)
        except SyntaxError as exc:
            raise _error(f"{what} `{expr}` is not a Python expression ({exc.msg}). Put spaces only between "
                         f"arguments, or quote an argument that has spaces.") from None
        except Exception as exc:  # noqa: BLE001 - any failure here is a wrong argument
            raise _error(f"{what} `{expr}` could not be evaluated ({type(exc).__name__}: {exc}).") from None

    def _function(self, expr: str, ns: Dict[str, Any], side: str) -> Any:
        fn = self._eval(expr, ns, f"FN_{side}")
        if not callable(fn):
            raise _error(f"FN_{side} `{expr}` is {type(fn).__name__}, not a function or module; the first two words "
                         f"are the implementations to compare, the inputs follow.")
        return fn

    def _arguments(self, words: List[str], ns: Dict[str, Any]) -> Tuple[List[Any], Dict[str, Any]]:
        args: List[Any] = []
        kwargs: Dict[str, Any] = {}
        for w in words:
            if w.startswith("**"):
                value = self._eval(w[2:], ns, "ARG")
                if not isinstance(value, Mapping):
                    raise _error(f"ARG `{w}`: ** needs a dict of keyword arguments; `{w[2:]}` is "
                                 f"{type(value).__name__}.")
                kwargs.update(value)
            elif w.startswith("*"):
                value = self._eval(w[1:], ns, "ARG")
                try:
                    args.extend(value)
                except TypeError:
                    raise _error(f"ARG `{w}`: * needs a list or tuple; `{w[1:]}` is {type(value).__name__}.") \
                        from None
            else:
                name, eq, expr = w.partition("=")
                if eq and name.isidentifier() and not expr.startswith("="):
                    kwargs[name] = self._eval(expr, ns, f"ARG {name}=")
                else:
                    args.append(self._eval(w, ns, "ARG"))
        return args, kwargs

    @staticmethod
    def _labels(value: Optional[str], words: List[str]) -> Tuple[str, str]:
        if value is None:
            la, lb = (w.rsplit(".", 1)[-1] for w in words)
            return (la, lb) if la != lb and la.isidentifier() and lb.isidentifier() else ("A", "B")
        parts = [p.strip() for p in value.split(",")]
        if len(parts) != 2 or not all(parts):
            raise _error(f"--labels {value!r}: write two names separated by a comma, e.g. --labels repeat,broadcast.")
        return parts[0], parts[1]
