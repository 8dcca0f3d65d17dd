"""``python -m graphwidget compare pkg.mod:fn_a pkg.mod:fn_b --inputs pkg.mod:make_inputs``: the check to put in CI
after a refactor.

Prints the diff's report; ``--out diff.html`` also writes the offline side-by-side view. Exit status: 0 when the
outputs and gradients match (and, with ``--fail-if-slower R``, B's backward is not slower than R × A beyond noise);
1 when they differ (or have different structures), when B is slower than that (the low end of the 95 % interval of
B/A is above R), or when a function raised; 2 for a usage error (a name that does not resolve, bad options), with a
message saying what to write instead.

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


class UsageProblem(Exception):
    """A command-line mistake: printed as one message, exit status 2."""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """The ``compare`` subcommand's options (on the CLI's subparsers)."""
    c = sub.add_parser("compare", help="compare two implementations: same maths? what changed in the graph? "
                                       "which backward is faster?",
                       description=__doc__.split("\n\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("fn_a", metavar="MODULE:FN_A", help="the reference implementation (A)")
    c.add_argument("fn_b", metavar="MODULE:FN_B", help="the new implementation (B)")
    c.add_argument("--inputs", metavar="MODULE:MAKE_INPUTS", required=True,
                   help="a function returning the inputs (dict: keyword arguments; tuple/list: positional)")
    c.add_argument("--labels", metavar="A,B", help="names of the two sides (default: the function names)")
    c.add_argument("--profile", action="store_true", help="time both backwards, interleaved")
    c.add_argument("--repeat", type=int, default=20, metavar="N", help="timed rounds with --profile (default 20)")
    c.add_argument("--out", type=Path, metavar="HTML", help="write the offline side-by-side view here")
    c.add_argument("--fail-if-slower", type=float, metavar="R",
                   help="exit 1 when B's backward is slower than R x A beyond noise (implies --profile)")
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
            raise UsageProblem(f"--inputs {spec!r} raised {type(exc).__name__}: {exc}") from None
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
        return 2


def _labels(args: argparse.Namespace) -> Tuple[str, str]:
    if args.labels is None:
        la, lb = args.fn_a.rpartition(":")[2], args.fn_b.rpartition(":")[2]
        return (la, lb) if la != lb else ("A", "B")
    parts = [p.strip() for p in args.labels.split(",")]
    if len(parts) != 2 or not all(parts):
        raise UsageProblem(f"--labels {args.labels!r}: write two names separated by a comma, e.g. --labels "
                           f"repeat,broadcast.")
    return parts[0], parts[1]


def _run(args: argparse.Namespace) -> int:
    if args.fail_if_slower is not None and not args.fail_if_slower > 0:
        raise UsageProblem(f"--fail-if-slower {args.fail_if_slower}: R is a ratio > 0, e.g. 1.1 (fail when B's "
                           f"backward is more than 10 % slower than A's beyond noise).")
    if args.repeat < 3:
        raise UsageProblem(f"--repeat {args.repeat}: at least 3 timed rounds are needed for an interval.")
    labels = _labels(args)
    fn_a = _callable(resolve(args.fn_a, "FN_A"), args.fn_a, "FN_A")
    fn_b = _callable(resolve(args.fn_b, "FN_B"), args.fn_b, "FN_B")
    pos, kw = inputs_from(args.inputs)
    profile = args.profile or args.fail_if_slower is not None
    from ..experiment.compare import CompareError, StructureMismatch, compare
    try:
        d = compare(fn_a, fn_b, *pos, labels=labels, profile=profile, repeat=args.repeat, **kw)
    except StructureMismatch as exc:
        print(f"graphwidget compare: FAIL: {exc}", file=sys.stderr)
        return 1
    except CompareError as exc:
        cause = exc.__cause__
        print(f"graphwidget compare: FAIL: {exc}", file=sys.stderr)
        if cause is not None:
            import traceback
            traceback.print_exception(type(cause), cause, cause.__traceback__, file=sys.stderr)
        return 1
    except (TypeError, ValueError) as exc:
        raise UsageProblem(str(exc)) from None
    print(d.report())
    if args.out is not None:
        path = d.export_html(args.out)
        print(f"wrote {path}  (open it in any browser, offline)")
    status = 0
    if d.equivalent is False:
        print(f"FAIL: {labels[1]} does not compute the same outputs and gradients as {labels[0]}.")
        status = 1
    r = args.fail_if_slower
    if r is not None and d.timing:
        low = d.timing["low"]
        if low > r:
            print(f"FAIL: {labels[1]}'s backward is slower than {r:g} x {labels[0]}'s beyond noise (B/A "
                  f"{d.timing['ratio']:.2f}, interval {low:.2f}-{d.timing['high']:.2f}).")
            status = 1
        else:
            print(f"ok: {labels[1]}'s backward is not slower than {r:g} x {labels[0]}'s beyond noise (interval low "
                  f"end {low:.2f} <= {r:g}).")
    return status
