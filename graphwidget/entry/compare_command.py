"""``python -m graphwidget compare pkg.mod:fn_a pkg.mod:fn_b --inputs pkg.mod:make_inputs``: the check to put in CI
after a refactor.

Prints the verdicts' sentence and the diff's report; ``--out diff.html`` also writes the offline side-by-side view.
The exit status is one of the command line's table (:data:`graphwidget.entry.exits.STATUS`, printed by
``compare --help``): 0 the same maths (and, with ``--fail-if-slower R``, B's step not slower than R × A's beyond
noise: the low end of the 95 % interval of B/A, ``--phase``, at most R), 1 not equivalent, 2 a usage error said
before anything runs, 3 slower than the bound, 4 your code raised (a function, its backward, ``--inputs``), 5 a
file could not be written after the run, 7 an error inside graphwidget. When both 1 and 3 apply, 1 wins (a wrong
result matters more than a slow one). A failure is one line on stderr; ``--traceback`` adds the traceback.

Either side may be a recording's file instead (``python -m graphwidget record ... --out a.gwrec``): ``compare
a.gwrec b.gwrec`` compares two recordings (made by other commits, library versions or processes) with the same
verdicts, and needs no ``--inputs``; ``compare a.gwrec pkg.mod:fn_b`` runs ``fn_b`` on the recorded inputs (or on
``--inputs``, whose digest must be the recording's). ``--markdown summary.md`` writes the summary as Markdown, for a
CI job summary or a pull-request comment.

Names are ``module:attribute`` (``pkg.models:forward_v2``, ``pkg.models:Model.forward``) or ``path/to/file.py:name``.
An ``nn.Module`` class is instantiated without arguments. ``--inputs`` names a function called without arguments
(or a value) giving the inputs: a dict is passed as keyword arguments, a tuple or list as positional arguments,
anything else as the one argument.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

from .exits import EXIT, fail, run_failed, table_text

__all__ = ["EXIT", "UsageProblem", "UserCodeFailed", "add_parser", "run"]


class UsageProblem(Exception):
    """A command-line mistake: printed as one message, exit status 2."""


class UserCodeFailed(Exception):
    """The user's code raised once it ran (``--inputs``): printed as one message, exit status 4; the error is the
    cause."""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """The ``compare`` subcommand's options (on the CLI's subparsers)."""
    c = sub.add_parser("compare", help="compare two implementations: same maths? what changed in the graph? "
                                       "which backward is faster?",
                       description="Runs both on the --inputs: same maths? what changed in the graph? which\n"
                                   "backward is faster? Prints the verdicts and the diff's report. Either side may\n"
                                   "be a recording's file (python -m graphwidget record ... --out a.gwrec).",
                       epilog="exit status:\n" + table_text(), formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("fn_a", metavar="MODULE:FN_A", help="the reference implementation (A), or a recording's file")
    c.add_argument("fn_b", metavar="MODULE:FN_B", help="the new implementation (B), or a recording's file")
    c.add_argument("--inputs", metavar="MODULE:MAKE_INPUTS",
                   help="a function returning the inputs (dict: keyword arguments; tuple/list: positional); not "
                        "needed when a side is a recording")
    c.add_argument("--labels", metavar="A,B", help="names of the two sides (default: the function names)")
    c.add_argument("--profile", action="store_true", help="time both sides (plain runs, interleaved)")
    c.add_argument("--budget", type=float, default=3.0, metavar="S",
                   help="seconds of timing at most, once the first rounds ran (default 3)")
    c.add_argument("--band", type=float, default=0.05, metavar="F",
                   help="within this fraction, the same speed (default 0.05: ±5 %%)")
    c.add_argument("--repeat", type=int, default=5, metavar="N",
                   help="instrumented rounds for per-node times with --profile (default 5)")
    c.add_argument("--out", type=Path, metavar="HTML", help="write the offline side-by-side view here")
    c.add_argument("--markdown", type=Path, metavar="MD", help="write the summary as Markdown here (a CI job "
                   "summary, a pull-request comment)")
    c.add_argument("--fail-if-slower", type=float, metavar="R",
                   help="exit 3 when B is slower than R x A beyond noise (implies --profile)")
    c.add_argument("--phase", choices=("step", "forward", "backward"), default="step",
                   help="what --fail-if-slower judges (default: the whole step)")
    c.add_argument("--traceback", action="store_true", help="on a failure, print the traceback too")
    return c


def resolve(spec: str, what: str) -> Any:
    """``module:attr.path`` or ``file.py:attr`` to the object, or :class:`UsageProblem` saying what is wrong."""
    if ":" not in spec:
        raise UsageProblem(f"{what} {spec!r}: write MODULE:NAME, e.g. mypkg.models:forward_v2 or "
                           f"path/to/file.py:forward_v2.")
    mod_name, _, attr = spec.rpartition(":")
    if not mod_name or not attr:
        raise UsageProblem(f"{what} {spec!r}: both the module and the name are needed (MODULE:NAME).")
    try:
        if mod_name.endswith(".py"):
            path = Path(mod_name)
            if not path.is_file():
                raise UsageProblem(f"{what} {spec!r}: no file {path}.")
            mspec = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(mspec)  # type: ignore[arg-type]
            sys.modules.setdefault(path.stem, module)
            mspec.loader.exec_module(module)  # type: ignore[union-attr]
        else:
            module = importlib.import_module(mod_name)
    except UsageProblem:
        raise
    except Exception as exc:
        raise UsageProblem(f"{what} {spec!r}: cannot import {mod_name} ({type(exc).__name__}: {exc}). Run from the "
                           f"folder that contains it or install the package.") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = sorted(n for n in dir(obj) if not n.startswith("_"))[:12]
            raise UsageProblem(f"{what} {spec!r}: {mod_name} has no {attr!r}. It has: {', '.join(names)}.")
        obj = getattr(obj, part)
    return obj


def _callable(obj: Any, spec: str, what: str) -> Any:
    import torch
    if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
        try:
            return obj()
        except Exception as exc:
            raise UsageProblem(f"{what} {spec!r} is an nn.Module class that cannot be made without arguments "
                               f"({type(exc).__name__}: {exc}); name a function or a module instance.") from None
    if not callable(obj):
        raise UsageProblem(f"{what} {spec!r} is {type(obj).__name__}, not a function or a module.")
    return obj


def inputs_from(spec: str) -> Tuple[List[Any], Dict[str, Any]]:
    obj = resolve(spec, "--inputs")
    if callable(obj):
        try:
            obj = obj()
        except Exception as exc:
            raise UserCodeFailed(f"--inputs {spec!r} raised") from exc
    if isinstance(obj, dict):
        return [], dict(obj)
    if isinstance(obj, (tuple, list)):
        return list(obj), {}
    return [obj], {}


def run(args: argparse.Namespace) -> int:
    """The ``compare`` command; returns the exit status."""
    try:
        return _run(args)
    except UsageProblem as exc:
        print(f"graphwidget compare: {exc}", file=sys.stderr)
        return EXIT["usage"]
    except UserCodeFailed as exc:
        cause = exc.__cause__ or exc
        return fail("compare", str(exc), cause, "error", args.traceback)


def _labels(args: argparse.Namespace) -> Tuple[str, str]:
    if args.labels is None:
        la, lb = (Path(x).stem if _recording(x) else x.rpartition(":")[2] for x in (args.fn_a, args.fn_b))
        return (la, lb) if la != lb else ("A", "B")
    parts = [p.strip() for p in args.labels.split(",")]
    if len(parts) != 2 or not all(parts):
        raise UsageProblem(f"--labels {args.labels!r}: write two names separated by a comma, e.g. --labels "
                           f"repeat,broadcast.")
    return parts[0], parts[1]


def check_out(path: Path, flag: str = "--out", example: str = "diff.html") -> None:
    """An ``--out`` that cannot be written is a usage error said up front, not a traceback after minutes of work."""
    import tempfile
    if path.is_dir():
        raise UsageProblem(f"{flag} {path}: that is a folder; name the file to write, e.g. {path / example}.")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise UsageProblem(f"{flag} {path}: the folder {folder} does not exist; create it first.")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise UsageProblem(f"{flag} {path}: cannot write in {folder} ({exc.strerror or exc}); choose a folder you "
                           f"can write to.") from None


def _recording(spec: str) -> bool:
    """Whether a side's argument names a recording's file (or another safetensors file, refused when read)."""
    from ..model import recfile
    return recfile.kind(spec) is not None


def _side(spec: str, what: str) -> Any:
    """A side: the recording a file holds (read and checked: a broken file is a usage error), or the callable a
    name resolves to."""
    if not _recording(spec):
        return _callable(resolve(spec, what), spec, what)
    from ..experiment.recording import load_recording
    try:
        return load_recording(spec)
    except ValueError as exc:
        raise UsageProblem(f"{what}: {exc}") from None


def _no_inputs(args: argparse.Namespace) -> Tuple[List[Any], Dict[str, Any]]:
    """No ``--inputs``: fine when a side is a recording (it holds its inputs), else a usage error."""
    if not (_recording(args.fn_a) or _recording(args.fn_b)):
        raise UsageProblem("--inputs MODULE:MAKE_INPUTS is needed to run two functions (only recordings hold their "
                           "own inputs).")
    return [], {}


def _run(args: argparse.Namespace) -> int:
    if args.fail_if_slower is not None and not args.fail_if_slower > 0:
        raise UsageProblem(f"--fail-if-slower {args.fail_if_slower}: R is a ratio > 0, e.g. 1.1 (fail when B is "
                           f"more than 10 % slower than A beyond noise).")
    if args.repeat < 1:
        raise UsageProblem(f"--repeat {args.repeat}: at least 1 instrumented round.")
    if not args.budget > 0:
        raise UsageProblem(f"--budget {args.budget}: a number of seconds > 0, e.g. 3.")
    if not 0 <= args.band < 1:
        raise UsageProblem(f"--band {args.band}: a fraction in [0, 1), e.g. 0.05 for ±5 %.")
    if args.out is not None:
        check_out(args.out)
    if args.markdown is not None:
        check_out(args.markdown, "--markdown", "summary.md")
    labels = _labels(args)
    no_inputs = _no_inputs(args) if args.inputs is None else None  # a usage error, said before torch loads
    from .. import _load_torch_stages
    _load_torch_stages()  # only now: --help and the mistakes above are answered without waiting for torch
    fn_a = _side(args.fn_a, "FN_A")
    fn_b = _side(args.fn_b, "FN_B")
    pos, kw = inputs_from(args.inputs) if no_inputs is None else no_inputs
    profile = args.profile or args.fail_if_slower is not None
    from ..experiment.compare import CompareError, StructureMismatch
    from ..experiment.nway import compare  # two functions, or a side that is a recording
    try:
        d = compare(fn_a, fn_b, *pos, labels=labels, profile=profile, repeat=args.repeat, band=args.band,
                    budget=args.budget, **kw)
    except StructureMismatch as exc:
        print(f"graphwidget compare: NOT EQUIVALENT: {exc}", file=sys.stderr)
        return EXIT["not equivalent"]
    except CompareError as exc:
        return run_failed("compare", exc, args.traceback)
    except (TypeError, ValueError) as exc:
        # Every option was checked above, so these come from running the user's code (a backward that raised, a
        # result with nothing to differentiate): not a usage error, which is said before anything runs.
        return fail("compare", "ERROR: running the functions failed", exc, "error", args.traceback)
    print(d.report())
    if args.markdown is not None:
        args.markdown.write_text(d.markdown(title=f"graphwidget compare: {labels[1]} vs {labels[0]}") + "\n",
                                 encoding="utf-8")
        print(f"wrote {args.markdown}")
    if args.out is not None:
        try:
            path = d.export_html(args.out)
        except OSError as exc:
            return fail("compare", f"cannot write --out {args.out}", exc, "write failed", args.traceback)
        print(f"wrote {path}  (open it in any browser, offline)")
    status = EXIT["ok"]
    r = args.fail_if_slower
    if r is not None and d.timing:
        ph = d.timing.get(args.phase) or {}
        low, what = ph.get("low"), "whole step" if args.phase == "step" else args.phase
        if low is not None and low > r:
            print(f"FAIL (exit {EXIT['slower']}): {labels[1]}'s {what} is slower than {r:g} x {labels[0]}'s beyond "
                  f"noise ({labels[1]}/{labels[0]} {ph['ratio']:.2f}, interval {low:.2f}-{ph['high']:.2f}).")
            status = EXIT["slower"]
        elif low is not None:
            print(f"ok: {labels[1]}'s {what} is not slower than {r:g} x {labels[0]}'s beyond noise (interval low "
                  f"end {low:.2f} <= {r:g}).")
    if d.equivalent is False:
        print(f"FAIL (exit {EXIT['not equivalent']}): {labels[1]} does not compute the same outputs and gradients "
              f"as {labels[0]}.")
        status = EXIT["not equivalent"]
    return status
