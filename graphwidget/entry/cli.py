"""``python -m graphwidget``: ``demo`` (the main job), ``compare`` (two implementations: same maths? what changed?
which backward is faster?), ``build-native`` (compile the capture core) and ``doctor`` (what to paste into a bug
report)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m graphwidget",
                                 description="See, measure and compare PyTorch autograd graphs.")
    sub = ap.add_subparsers(dest="cmd")
    d = sub.add_parser("demo", help="run the demo on the built-in examples")
    d.add_argument("--out", type=Path, default=Path("out"), help="folder for the HTML viewers (default: out)")
    d.add_argument("--no-profile", action="store_true", help="skip timing (structure and sizes only)")
    from .compare_command import add_parser as add_compare  # torch is imported only when it runs
    add_compare(sub)
    b = sub.add_parser("build-native",
                       help="compile the optional capture core for this environment (a few minutes, once)")
    b.add_argument("--verbose", action="store_true", help="show the compiler's output")
    b.add_argument("--system", action="store_true",
                   help="build into <sys.prefix>/share/graphwidget/native, for everyone using this Python (admins)")
    b.add_argument("--clean", action="store_true", help="remove this environment's builds instead (before an "
                   "uninstall)")
    dr = sub.add_parser("doctor", help="versions, engine, core and bundle locations: paste it into a bug report")
    dr.add_argument("--json", action="store_true", help="print the report as JSON")
    args = ap.parse_args(argv)
    if args.cmd == "demo":
        from .demo import run_demo
        run_demo(args.out, profile=not args.no_profile)
        return 0
    if args.cmd == "compare":
        from .compare_command import run as run_compare
        return run_compare(args)
    if args.cmd == "build-native":
        return _build_native(args.verbose, args.system, args.clean)
    if args.cmd == "doctor":
        from .doctor import main as doctor_main
        return doctor_main(as_json=args.json)
    ap.print_help()
    return 2


def _build_native(verbose: bool, system: bool, clean: bool) -> int:
    """``build-native``: every failure (a missing tool, an unwritable folder, compiler errors) is one plain message
    and exit code 1, never a traceback."""
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
        return 1
    print(f"graphwidget: compiled capture core ready ({time.perf_counter() - t0:.0f} s): {path}")
    return 0
