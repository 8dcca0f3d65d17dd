"""``python -m graphwidget record pkg.mod:fn --inputs pkg.mod:make_inputs --out a.gwrec``: one side of a comparison,
run and kept, to compare later with ``python -m graphwidget compare a.gwrec b.gwrec`` (another commit, another
library version, another machine's process).

The exit status is one of the command line's table (:data:`graphwidget.entry.exits.STATUS`): 0 written; 2 a usage
error (a name that does not resolve, an unwritable ``--out``), said before anything runs; 4 your code raised (the
function, its backward, ``--inputs``); 5 the file could not be written after the run. Names and ``--inputs`` are read
as by ``compare``.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .compare_command import UsageProblem, _callable, check_out, inputs_from, resolve
from .exits import EXIT, fail, run_failed, table_text


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """The ``record`` subcommand's options (on the CLI's subparsers)."""
    r = sub.add_parser("record", help="run one implementation once (forward and backward) and save what a later "
                                      "compare needs, to compare across commits, versions and processes",
                       description=__doc__.split("\n\n")[0], epilog="exit status:\n" + table_text(),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("fn", metavar="MODULE:FN", help="the implementation to record")
    r.add_argument("--inputs", metavar="MODULE:MAKE_INPUTS", required=True,
                   help="a function returning the inputs (dict: keyword arguments; tuple/list: positional)")
    r.add_argument("--out", type=Path, required=True, metavar="FILE",
                   help="where to write the recording (e.g. main.gwrec)")
    r.add_argument("--label", help="the side's name in comparisons (default: the function's name)")
    r.add_argument("--profile", action="store_true", help="also time plain runs of the step (for a speed verdict "
                   "against a recording timed on the same machine)")
    r.add_argument("--budget", type=float, default=3.0, metavar="S", help="seconds of timing (default 3)")
    r.add_argument("--no-backward", action="store_true", help="record the outputs only (no gradients)")
    r.add_argument("--no-inputs", action="store_true", help="keep only the inputs' digest, not their values")
    r.add_argument("--traceback", action="store_true", help="on a failure, print the traceback too")
    return r


def run(args: argparse.Namespace) -> int:
    """The ``record`` command; returns the exit status."""
    try:
        return _run(args)
    except UsageProblem as exc:
        print(f"graphwidget record: {exc}", file=sys.stderr)
        return EXIT["usage"]


def _run(args: argparse.Namespace) -> int:
    if not args.budget > 0:
        raise UsageProblem(f"--budget {args.budget}: a number of seconds > 0, e.g. 3.")
    if args.label is not None and not args.label.strip():
        raise UsageProblem("--label: give a non-empty name.")
    check_out(args.out)
    from .. import _load_torch_stages
    _load_torch_stages()  # only now: --help and the mistakes above are answered without waiting for torch
    fn = _callable(resolve(args.fn, "FN"), args.fn, "FN")
    pos, kw = inputs_from(args.inputs)
    from ..experiment.compare import CompareError
    from ..experiment.recording import record
    label = args.label or args.fn.rpartition(":")[2]
    try:
        rec = record(fn, *pos, label=label, backward=not args.no_backward, profile=args.profile,
                     budget=args.budget, keep_inputs=not args.no_inputs, **kw)
    except CompareError as exc:
        return run_failed("record", exc, args.traceback)
    except (TypeError, ValueError) as exc:
        # every option was checked above, so these come from running the user's code: not a usage error
        return fail("record", "ERROR: running the function failed", exc, "error", args.traceback)
    try:
        path = rec.save(args.out)
    except OSError as exc:
        return fail("record", f"cannot write --out {args.out}", exc, "write failed", args.traceback)
    print(rec.summary())
    print(f"wrote {path} ({path.stat().st_size} bytes)")
    return EXIT["ok"]
