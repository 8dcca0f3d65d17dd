"""``python -m graphwidget``: ``demo`` (the main job), ``compare`` (two implementations: same maths? what changed?
which backward is faster?), ``ranks`` (the graphs the ranks of a distributed job wrote: stragglers, divergent
graphs, unused parameters), ``build-native`` (compile the capture core) and ``doctor`` (what to paste into a bug
report). ``record`` keeps one side for a later ``compare a.gwrec b.gwrec``.

Every command exits with a status of :data:`.exits.STATUS` (``--help`` shows the table): an unexpected failure is one
line on stderr and a status of its own, never 1 (which says the result changed) and never a traceback unless
``--traceback``. Arguments are read, and usage errors answered, before torch is imported.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from .exits import EXIT, fail, reader_left, silence_stdout, table_text


def _add_traceback(p: argparse.ArgumentParser) -> None:
    p.add_argument("--traceback", action="store_true", help="on a failure, print the traceback too")


def _load_torch() -> None:
    """Load torch and wire its stages in (``python -m graphwidget`` defers it until the arguments are read)."""
    from .. import _load_torch_stages
    _load_torch_stages()


def parser() -> argparse.ArgumentParser:
    """The whole command line (torch-free)."""
    ap = argparse.ArgumentParser(prog="python -m graphwidget",
                                 description="See, measure and compare PyTorch autograd graphs.",
                                 epilog="exit status (every command):\n" + table_text(),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd")
    d = sub.add_parser("demo", help="run the demo on the built-in examples")
    d.add_argument("--out", type=Path, default=Path("out"), help="folder for the HTML viewers (default: out)")
    d.add_argument("--no-profile", action="store_true", help="skip timing (structure and sizes only)")
    from .compare_command import add_parser as add_compare  # torch is imported only when it runs
    add_compare(sub)
    from .record_command import add_parser as add_record
    add_record(sub)
    rk = sub.add_parser("ranks", help="compare the graphs each rank of a distributed job wrote "
                        "(gw.profile(..., ranks=gw.Ranks(dir=DIR)) or RankSet.save(DIR))")
    rk.add_argument("dir", type=Path, help="the folder of rank00000.json, rank00001.json, ...")
    rk.add_argument("--out", type=Path, help="write the N-way HTML view (one pane per shown rank)")
    rk.add_argument("--json", type=Path, help="write the N-way document (graphwidget-nway JSON)")
    rk.add_argument("--show", help="ranks to show as panes, e.g. 0,2,3 (default: the reference rank, the ranks "
                    "whose graph differs, the straggler)")
    rk.add_argument("--fail-on-divergence", action="store_true",
                    help="exit 1 when a rank's graph differs from the others'")
    b = sub.add_parser("build-native",
                       help="compile the optional capture core for this environment (a few minutes, once)")
    b.add_argument("--verbose", action="store_true", help="show the compiler's output")
    b.add_argument("--system", action="store_true",
                   help="build into <sys.prefix>/share/graphwidget/native, for everyone using this Python (admins)")
    b.add_argument("--clean", action="store_true", help="remove this environment's builds instead (before an "
                   "uninstall)")
    dr = sub.add_parser("doctor", help="versions, engine, core and bundle locations: paste it into a bug report")
    dr.add_argument("--json", action="store_true", help="print the report as JSON")
    for p in (d, rk, b, dr):
        _add_traceback(p)
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run one command; returns its exit status (:data:`.exits.STATUS`)."""
    ap = parser()
    args = ap.parse_args(argv)
    if args.cmd is None:
        ap.print_help()
        return EXIT["usage"]
    show = bool(getattr(args, "traceback", False))
    try:
        return _dispatch(args)
    except KeyboardInterrupt:
        print(f"graphwidget {args.cmd}: interrupted", file=sys.stderr)
        return EXIT["interrupted"]
    except OSError as exc:
        if reader_left(exc):  # `... | head`: the reader chose to stop; nothing is wrong with the run
            silence_stdout()
            return EXIT["output closed"]
        return fail(args.cmd, "cannot write or read a file", exc, "write failed", show)
    except Exception as exc:  # a bug of ours: a status of its own, never 1 ("the result changed")
        return fail(args.cmd, "internal error, please report it", exc, "internal", show)


def _dispatch(args: argparse.Namespace) -> int:
    if args.cmd == "demo":
        print("graphwidget demo: loading torch ...", flush=True)
        _load_torch()
        from .demo import run_demo
        run_demo(args.out, profile=not args.no_profile, core_hint=True)
        return 0
    if args.cmd == "compare":
        from .compare_command import run as run_compare
        return run_compare(args)
    _load_torch()
    if args.cmd == "record":
        from .record_command import run as run_record
        return run_record(args)
    if args.cmd == "ranks":
        return _ranks(args)
    if args.cmd == "build-native":
        return _build_native(args.verbose, args.system, args.clean)
    from .doctor import main as doctor_main
    return doctor_main(as_json=args.json)


def _ranks(args: argparse.Namespace) -> int:
    """``ranks DIR``: the report of the RankSet the files make. Exit 0; 1 with ``--fail-on-divergence`` when a
    rank's graph differs; 2 when the folder holds no rank graphs or an option is wrong (said, no traceback)."""
    from ..analysis.ranks import RankSet
    from ..model.schema import SchemaError
    try:
        show = None if args.show is None else [int(x) for x in args.show.split(",") if x.strip()]
    except ValueError:
        print(f"graphwidget ranks: --show takes ranks separated by commas, e.g. 0,2,3; got {args.show!r}",
              file=sys.stderr)
        return EXIT["usage"]
    try:
        rs = RankSet.from_dir(args.dir)
        d = rs.nway(show)
    except (OSError, ValueError, KeyError, SchemaError) as exc:
        print(f"graphwidget ranks: {exc}", file=sys.stderr)
        return EXIT["usage"]
    print(rs.report())
    try:
        if args.json is not None:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(d.to_json(), encoding="utf-8")
            print(f"wrote {args.json}")
        if args.out is not None:
            print(f"wrote {d.export_html(args.out)}")
    except OSError as exc:
        return fail("ranks", "cannot write", exc, "write failed", args.traceback)
    return EXIT["not equivalent"] if args.fail_on_divergence and rs.divergent else EXIT["ok"]


def _build_native(verbose: bool, system: bool, clean: bool) -> int:
    """``build-native``: every failure (a missing tool, an unwritable folder, compiler errors) is one plain message
    and the status "build failed", never a traceback."""
    from ..capturing import native
    try:
        if clean:
            removed = native.clean(system=system)
            print("graphwidget: removed " + (", ".join(map(str, removed)) if removed else "nothing (no build here)"))
            return 0
        import time
        if native.available():
            print(f"graphwidget: the compiled capture core is already built: {native.library_path()}")
            return 0
        print(f"graphwidget: compiling the capture core for this environment ({native.BUILD_TIME}) ...",
              file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        path = native.build(verbose=verbose, system=system)
    except (RuntimeError, OSError) as exc:  # BuildError, PermissionError, ... : say it, no traceback
        what = str(exc) if isinstance(exc, RuntimeError) else f"{type(exc).__name__}: {exc}"
        print(f"graphwidget: {what}", file=sys.stderr)
        return EXIT["build failed"]
    print(f"graphwidget: compiled capture core ready ({time.perf_counter() - t0:.0f} s): {path}")
    return 0
