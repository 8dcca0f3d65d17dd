"""``python -m graphwidget``: ``demo`` (the main job), ``compare`` (two implementations: same maths? what changed?
which backward is faster?) and ``build-native`` (compile the capture core)."""
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
    from .analysis.diff.command import add_parser as add_compare  # torch is imported only when it runs
    add_compare(sub)
    b = sub.add_parser("build-native", help="compile the capture core for this torch (about a minute)")
    b.add_argument("--verbose", action="store_true", help="show the compiler's output")
    args = ap.parse_args(argv)
    if args.cmd == "demo":
        from .examples.demo import run_demo
        run_demo(args.out, profile=not args.no_profile)
        return 0
    if args.cmd == "compare":
        from .analysis.diff.command import run as run_compare
        return run_compare(args)
    if args.cmd == "build-native":
        from .capture import native
        try:
            path = native.build(verbose=args.verbose)
        except RuntimeError as exc:
            print(f"graphwidget: {exc}", file=sys.stderr)
            return 1
        print(f"graphwidget: compiled capture core ready: {path}")
        return 0
    ap.print_help()
    return 2
