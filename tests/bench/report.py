"""Regenerate docs/performance.md: run every benchmark of tests/bench/ and write what they print, with the machine.

    .venv/bin/python tests/bench/report.py                      # quick modes; writes docs/performance.md
    .venv/bin/python tests/bench/report.py --full               # each script's full mode (much longer)
    .venv/bin/python tests/bench/report.py --scale              # quick modes plus million-node runs (issue 20)
    .venv/bin/python tests/bench/report.py --only capture diff --out /tmp/perf.md
    .venv/bin/python tests/bench/report.py --only secondary --update   # rerun these; keep the other sections

docs/performance.md is the one place that holds measured numbers; the other docs link to it. Nothing here judges the
numbers: each script prints its own targets and verdicts, and this script copies them verbatim (markdown tables as
tables, aligned text in code blocks), adding the date, the machine (cores, CPU, memory, load average before and
after each script, torch and Python versions, which capture engine ran) and how long each script took. Each
section names the commit and date it ran at, so that ``--update`` (rerun the chosen scripts, replace their sections
in the existing file, keep every other section as it was) leaves a file that still says where each number came from.
The
scripts run one after another, each in its own process, with the environment this script was given
(``GRAPHWIDGET_NATIVE=0`` reaches them). A script that fails is reported as failed, with the end of its stderr.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Tuple

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "tests" / "bench"
OUT = ROOT / "docs" / "performance.md"


class Bench(NamedTuple):
    key: str
    script: str
    title: str
    quick: Tuple[str, ...]
    full: Tuple[str, ...]
    about: str
    #: with --scale, a second run of the script at a million nodes (issue 20's goals), reported in its own section
    scale: Tuple[str, ...] = ()


BENCHES: List[Bench] = [
    Bench("capture", "bench_capture.py", "Capture: `gw.capture`, `to_json`, `load_json`", ("--quick",), (),
          "A chain of tiny ops and a wide random DAG (without and with saved tensors) captured on a fresh graph each "
          "time, against the bare depth-first walk over `next_functions` with the GC paused (as capture runs), "
          "measured in the same run: the ratio of CPU times is the number to read (absolute and wall times follow "
          "the machine). `capture` is what users get (the compiled core when it is built and enabled, else pure "
          "Python); `python` forces the pure-Python engine. Fan-in: one `torch.cat` of k leaves, which must grow "
          "linearly in k. Targets: the compiled core at most 3x the bare walk from 100k nodes on; pure Python at "
          "most 6x at 1M nodes (full mode with `--python-1m`; `--python-bound`: the lower bound no pure-Python "
          "capture can beat, every read a capture must make (the pre-order walk, each output's shape, dtype and "
          "device, the sequence number, every saved value with its raw SavedVariable and unpack hook, each input's "
          "id), in C loops, plus the cheapest networkx build, each against the same floor); `--pipeline 1000000`: capture, save, export and diff "
          "of two 1M-node DAGs within 8 GB of resident memory.",
          ("--sizes", "1000000", "--kinds", "chain", "dag", "--python-1m", "--reps", "1", "--fan-in",
           "--python-bound", "1000000", "--pipeline", "1000000")),
    Bench("timing", "bench_timing.py", "Timing: `gw.profile` and `torch.profiler`", ("--quick",), (),
          "1: what one more profiled repeat costs against a plain forward+backward (targets: conv net at most "
          "x1.1, 10k-node chain at most x2), and where the chain's repeat goes; 2: the per-node table end to end "
          "against the same table from `torch.profiler` (target: at least 10x cheaper where per-node overhead "
          "dominates; on a compute-bound model nothing can be, the script prints what each adds to a plain run); "
          "3: the seed example's answer, `homography_repeat` vs `homography_broadcast` (B=8, 128x128), and the "
          "cross-check against `torch.profiler`. Single-threaded, plain and profiled runs interleaved."),
    Bench("compile", "bench_compile.py", "`torch.compile`d models under `trace` and `profile`", (), (),
          "A 6-block MLP stack compiled with inductor on CPU: the user's own compile, then `capture`, `trace` "
          "(first and second call), `profile(repeat=3)` and a compiled function called inside the traced one: "
          "node count, compiled regions, new Dynamo graphs and graph breaks each caused, and whether the "
          "gradients are bit-identical to an uninstrumented run."),
    Bench("diff", "bench_diff.py", "Diff: `gw.diff` on big graphs", ("--quick",), (),
          "Pairs of graphs where B is A with a few edits (an op inserted and one replaced in a chain; GELU in one "
          "layer of an `nn.TransformerEncoder` plus an extra op at the output; deletions, insertions and re-typed "
          "nodes in a random DAG). Wall and CPU seconds of `gw.diff` (on a shared machine the CPU time is what "
          "the diff costs), a linear hash-match floor of the same pair in the same run and the ratios to it, peak "
          "resident memory, `to_json` of the result, and how each pair was found; the random DAG also counts "
          "pairs that differ from its recipe. Targets: 10k-node pairs in 1 s, 100k-node pairs (full mode) in "
          "10 s; with `--sizes 100000 300000 1000000`, 300k within 4.5x the 100k time and 1M random DAGs in 20 s.",
          ("--sizes", "100000", "300000", "1000000", "--kinds", "random", "--repeat", "1")),
    Bench("files", "bench_files.py", "Files: graph JSON size, `to_json`, `load_json` (version 1 vs 2)", ("--quick",),
          (),
          "The random DAG of `bench_diff.py` written by the version 1 writer (records) "
          "and by version 2 (columns), in the same run: bytes per node (and gzip), `to_json`, `json.loads` "
          "of the same text (the floor) and `load_json` (parse and validate; version 2 builds the networkx graph "
          "on first use) with its ratio to the floor, `summary()` of the loaded graph and building networkx. "
          "Targets (issue 20): at most 150 B/node; `load_json` at most 2x `json.loads` at 1M nodes (full mode; "
          "the median of three pairs, the pairs' range in brackets).",
          ("--sizes", "1000000", "--repeat", "3")),
    Bench("families", "bench_families.py", "Op mixes: the bench's DAG, a scalar-op chain, a GPT-2 step", ("--quick",),
          (),
          "Three graph families (issue 35): the random DAG of `bench_capture.py`; `y = y * 1.0001` repeated (autograd "
          "saves a fresh 0-d tensor with its own storage per node); summed losses of GPT-2 passes (12 layers, from "
          "a config). Capture against the bare walk with the GC paused (least CPU of three fresh graphs), bytes "
          "per node of `to_json` (version 3, and version 2's flat columns for comparison), `load_json` against "
          "`json.loads` of the same text (median of paired runs, range in brackets); every round trip is checked "
          "exact. Targets: capture at most 3x the walk; at most 60 B/node on the two chains and 100 on the "
          "transformer; `load_json` at most 2x `json.loads`. Full mode adds 1M nodes.",
          ()),
    Bench("advisor", "bench_advisor.py", "Advisor: `advise()` on big graphs", ("--quick",), (),
          "Four traced programs (a tiny-op chain, one big loop, the seed's repeat pattern many times over, a "
          "stack of transformer layers), each advised as traced and again after `load_json`: best of 3 "
          "`advise()` calls and the slowest rule alone. Targets: 0.5 s at 10k nodes, 5 s at 100k (full mode)."),
    Bench("viewer", "bench_viewer.py", "Viewer: export size, load time, layout", ("--quick",), (),
          "Headless Chromium (Debian's, through Playwright, network refused) opening exported pages: the viewer "
          "bundle's size, time from `page.goto` to the first complete drawing (median, min-max over fresh "
          "browser contexts), CPU seconds of the page's main thread and renderer (these hardly depend on the "
          "machine's load, the wall time does), the view's own decode and layout times; *Expand all* on big "
          "grouped graphs; dagre against our layered layout on the same random DAGs; real models (GPT-2, BERT, "
          "a TransformerEncoder captured with `gw.trace`). Targets: 10k nodes ready in 1.5 s, 100k (grouped; "
          "full mode) in 5 s; viewer bundle at most 1 MB; at most 200 bytes of data per node.",
          ("--million", "--repeat", "2")),
    Bench("fps", "bench_fps.py", "Viewer: zooming and dragging a fully expanded big graph", ("--quick",), (),
          "Chromium at 1400x900, no GPU (the canvas rasterises in software): a graph exported, *Expand all* timed, "
          "then wheel and drag events sent inside the page one per animation frame, each frame timed by the page's "
          "clock; frames per second, the median and slowest frame, and how many frames the pane drew in full and "
          "how many from the bitmap of its last full frame (a gesture moves a big drawing as a bitmap until it "
          "rests). The zoom buttons always draw in full: their frames are what a frame costs without the bitmap. "
          "Graphs: a 10k random DAG without modules and a 100k chain (quick), and a 100k random DAG (full). "
          "Target (issue 34): at least 30 FPS at 100k nodes fully expanded, on a quiet machine."),
    Bench("diff_view", "bench_diff_view.py", "Diff view: load time in Chromium", ("--quick",), (),
          "The side-by-side diff page of two random DAGs (2 % of nodes changed, 1 % removed, 1 % added): first "
          "load in a fresh browser, then median over fresh contexts, CPU of main thread and renderer, the view's "
          "decode and layouts, selecting a node on A with B following. Target: a pair of 10k-node graphs ready in "
          "2 s."),
    Bench("memory", "bench_memory.py", "Memory: `memory=True`, the peak and checkpoint candidates", ("--quick",),
          (),
          "GPT-2 (4 layers, from a config) and a hand-written ResNet in training mode: `profile(memory=True)` "
          "plus `g.memory()` against a plain `profile`, interleaved (target at most x1.3); the peak the memory run "
          "reports against one plain step measured alone; the advisor's top checkpoint candidate, predicted "
          "against measured (the CPU allocator's peak of a plain step with and without `gw.with_checkpoint`; "
          "target: at least 70 % of the predicted saving), gradients compared bit for bit; full mode adds the "
          "memory line of `gw.compare(..., memory=True, profile=True)`."),
    Bench("secondary", "bench_secondary.py", "Secondary verdicts: memory place, checkpoint saving, stragglers, speed "
          "under load", (), (),
          "Issue 33's answers against independent truth, on models and jobs built in the script: the peak's place "
          "(module, line) against the source line of the allocation, the peak against the hand sum of the "
          "profiler's memory events, the top checkpoint candidates' predicted saving against the peak measured with "
          "`gw.with_checkpoint`, predicted recompute time against the module's forward timed directly; `torchrun` "
          "jobs of 2 and 4 ranks on gloo with one rank sleeping in a module's forward (straggler and excess against "
          "the injected delay, and an identical job that must name no straggler); compare's speed ratio of a pair "
          "more than 10x apart against plain CPU-time truth with two busy processes beside it (target: within "
          "15 %)."),
    Bench("divergence", "bench_divergence.py", "Where two implementations part: the divergence search's cost",
          ("--quick",), (),
          "`gw.compare(..., divergence=True)` against today's compare and one side's training step, each in a fresh "
          "subprocess (peak RSS its own); B a deep copy of A (the search walks every node). Targets (issue 31): "
          "at most 2x the time of compare without the search, at most 2x one side's step in memory, on the "
          "GPT-2-sized pair (full run: `bench_divergence.py` with no flags; quick: 12 blocks of width 128)."),
    Bench("record", "bench_record.py", "Recordings: size and time of `gw.record`, `save`, `load`, file compare",
          ("--quick",), (),
          "GPT-2 from a config (quick: 2 layers, seq 32; full: 12 layers, seq 128): one recording's size and the "
          "time to record, save and load it, and comparing two recording files against the in-process compare of "
          "the same two sides. Nothing is asserted."),
    Bench("interop", "bench_interop.py", "Interop: Chrome trace and Model Explorer exports", (), (),
          "`g.export_chrome_trace` (chrome://tracing, Perfetto) and `g.export_model_explorer` (the graph and its "
          "node-data files) of a profiled GPT-2-shaped model (12 blocks, from a config) and a profiled 100k-node "
          "chain: file sizes and the time to write them. No target."),
    Bench("pictures", "bench_pictures.py", "Pictures: Save… → SVG / PNG and `toSVG()`", (), (),
          "Chromium at a JupyterLab output pane's size (950x530): the SVG that the Save… menu and `toSVG()` write "
          "(size, node and group shapes in it, time inside the page) and the PNG (twice the CSS size; from the "
          "click to the download), for the seed graph and diff and a traced GPT-2-shaped model as it opens and "
          "after *Expand all*. No target."),
    Bench("gather", "bench_gather.py", "Ranks: gathering one graph per rank to rank 0", ("--quick",), (),
          "`torchrun` with 4 ranks on gloo, each holding the same traced `nn.TransformerEncoder` graph (~10k "
          "nodes quick, ~100k full); graphwidget's gather (what `gw.profile(..., ranks=\"all\")` runs after the "
          "step) by `gather_object` and by files, rank 0's medians over 3 gathers: its own `to_json`, writing its "
          "file, waiting for the other ranks' statuses, moving the graphs, reading them back (`load_json`), and the "
          "whole call with the RankSet built. No target: the numbers choose the default transport."),
]


def _run(cmd: List[str], timeout: float = 60) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                return f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def _load() -> str:
    try:
        return "{:.1f} / {:.1f} / {:.1f}".format(*os.getloadavg())
    except OSError:
        return "unknown"


def _facts() -> Dict[str, str]:
    """What the benchmarks' own Python sees (asked in a subprocess, with this environment)."""
    code = (
        "import json, sys, torch, plotly, graphwidget as gw\n"
        "from graphwidget.capturing import native\n"
        "s = native.status()\n"
        "print(json.dumps({'torch': torch.__version__, 'threads': torch.get_num_threads(),\n"
        "  'python': sys.version.split()[0], 'graphwidget': gw.__version__, 'plotly': plotly.__version__,\n"
        "  'core': 'compiled core' if s['available'] else 'pure Python (' + str(s['reason']) + ')'}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else {"error": out.stderr[-500:]}


def _sizes() -> List[str]:
    """Sizes that the docs argue with: the built bundles and the plotly.js an export with charts inlines."""
    rows = []
    static = ROOT / "graphwidget" / "static"
    for name in ("viewer.js", "widget.js"):
        p = static / name
        if p.is_file():
            rows.append(f"| `graphwidget/static/{name}` (built) | {p.stat().st_size:,} bytes "
                        f"({p.stat().st_size / 1024:,.0f} KiB) |")
    code = "import plotly.offline as o; print(len(o.get_plotlyjs().encode()))"
    out = _run([sys.executable, "-c", code], timeout=120)
    if out.isdigit():
        rows.append(f"| plotly.js, inlined once by an export with charts | {int(out):,} bytes "
                    f"({int(out) / 2**20:.1f} MiB) |")
    return rows


def _as_markdown(text: str) -> List[str]:
    """A script's output: runs of markdown table lines stay tables, everything else goes into text blocks."""
    out: List[str] = []
    block: List[str] = []
    kind: Optional[str] = None

    def flush() -> None:
        while block and not block[-1].strip():
            block.pop()
        if not block:
            return
        if kind == "table":
            out.extend(["", *block, ""])
        else:
            out.extend(["", "```text", *block, "```", ""])
        block.clear()

    for line in text.splitlines():
        k = "table" if line.startswith("|") else "text"
        if not line.strip() and kind == "table":
            flush()
            kind = None
            continue
        if k != kind:
            flush()
            kind = k
        if block or line.strip():
            block.append(line.rstrip())
    flush()
    return out


def run_bench(b: Bench, full: bool, timeout: float, scale: bool = False, commit: str = ""
              ) -> Tuple[List[str], float]:
    """Run one script (its quick or full mode; ``scale``: its million-node run) and return its section, which names
    the ``commit`` it ran at."""
    args = list(b.scale if scale else b.full if full else b.quick)
    cmd = [sys.executable, str(BENCH / b.script), *args]
    shown = " ".join([".venv/bin/python", f"tests/bench/{b.script}", *args])
    before = _load()
    print(f"[report] {shown} (load {before})", flush=True)
    t0 = time.perf_counter()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)
        stdout, stderr, code = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        stderr, code = f"timed out after {timeout:.0f} s", -1
    took = time.perf_counter() - t0
    after = _load()
    print(f"[report]   {took:.0f} s, exit {code}", flush=True)
    title = f"{b.title}, at a million nodes" if scale else b.title
    when = f"{_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC at {commit}" if commit else ""
    lines = [f"## {title}", "", b.about, "",
             f"`{shown}` — {took:.0f} s wall; load average (1 / 5 / 15 min) {before} before, {after} after"
             + (f"; ran {when}." if when else ".")]
    lines += _as_markdown(stdout)
    if code != 0:
        tail = "\n".join(stderr.strip().splitlines()[-15:])
        lines += [f"**The script failed** (exit {code}); the end of its stderr:", "", "```text", tail, "```", ""]
    return lines, took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full", action="store_true", help="each script's full mode instead of its quick one")
    ap.add_argument("--only", nargs="+", choices=[b.key for b in BENCHES], help="run only these benchmarks")
    ap.add_argument("--out", type=Path, default=OUT, help=f"where to write (default {OUT.relative_to(ROOT)})")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per script")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds for the whole report: a script that would start after they are spent is skipped, "
                         "and the report says so (each script that starts still gets up to --timeout, cut to what is "
                         "left of the budget)")
    ap.add_argument("--update", action="store_true",
                    help="rerun only the --only benchmarks and replace their sections in --out, keeping the others")
    ap.add_argument("--scale", action="store_true",
                    help="also run capture, files, diff and viewer at a million nodes (issue 20), each in a section "
                         "after the script's own")
    a = ap.parse_args()
    chosen = [b for b in BENCHES if not a.only or b.key in a.only]
    start_load, t0 = _load(), time.perf_counter()
    started = _dt.datetime.now(_dt.timezone.utc)
    facts = _facts()
    commit = _run(["git", "rev-parse", "--short", "HEAD"])
    # the file being written does not count: an --update run starts from a report not yet committed
    out_rel = os.path.relpath(a.out.resolve(), ROOT)
    changed = [ln for ln in _run(["git", "status", "--porcelain", "--untracked-files=no"]).splitlines()
               if ln.split(maxsplit=1)[-1] != out_rel]  # "XY path" (_run strips the first line's space)
    dirty = " (with uncommitted changes)" if changed else ""
    dirty_mark = "+" if dirty else ""
    if a.update and (not a.only or not a.out.is_file()):
        ap.error("--update needs --only (the benchmarks to rerun) and an existing --out file to update")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    sections: List[str] = []
    skipped: List[str] = []
    runs = [r for b in chosen for r in ([(b, False), (b, True)] if a.scale and b.scale else [(b, False)])]
    for b, scale in runs:
        left = a.timeout if a.budget is None else min(a.timeout, a.budget - (time.perf_counter() - t0))
        if left < 1:
            name = f"{b.key} (at a million nodes)" if scale else b.key
            skipped.append(name)
            print(f"[report] {name}: skipped, the --budget of {a.budget:.0f} s is spent", flush=True)
            if not a.update:  # an update keeps the section the file has
                sections += [f"## {b.title}{', at a million nodes' if scale else ''}", "",
                             f"**Skipped**: the report's `--budget` of {a.budget:.0f} s was spent before it could "
                             "start.", ""]
            continue
        lines, _ = run_bench(b, a.full, left, scale=scale, commit=commit + dirty_mark)
        sections += lines + [""]
    if a.update:
        update(a.out, chosen, sections, started, commit + dirty_mark, a.full)
        return
    total = time.perf_counter() - t0
    head = [
        "# Performance: every measured number, in one place",
        "",
        "Generated by `tests/bench/report.py`; do not edit by hand: rerun it (`.venv/bin/python tests/bench/report.py`,"
        " about as long as the durations below add up to) and commit the result. The other docs link here instead "
        "of copying numbers, so that no two copies can disagree.",
        "",
        "How to read it: wall times follow the machine's load (given before and after each script; on a shared "
        "machine other jobs inflate them), CPU times and ratios measured within one run much less. Each script "
        "prints its own targets and verdicts. Quick mode leaves out the biggest sizes (1M-node capture, 100k-node "
        "diffs and advisor graphs, 100k-node pages); `--full` runs them; `--scale` adds a million-node run of capture, "
        "files, diff and viewer.",
        "",
        "## This run",
        "",
        "| | |",
        "|---|---|",
        f"| date | {started:%Y-%m-%d %H:%M} UTC |",
        f"| mode | {'full' if a.full else 'quick'}{' + million-node runs' if a.scale else ''}: "
        f"{', '.join(b.key for b in chosen)}; {total / 60:.0f} min in all"
        f"{f' (budget {a.budget:.0f} s; skipped: ' + ', '.join(skipped) + ')' if skipped else ''} |",
        f"| commit | {commit or 'unknown'}{dirty} |",
        f"| machine | {os.cpu_count()} cores ({_cpu_model()}), {_memory()} memory, {platform.system()} "
        f"{platform.release()} |",
        f"| load average (1 / 5 / 15 min) | {start_load} at the start, {_load()} at the end |",
        f"| Python, torch | {facts.get('python', '?')}, torch {facts.get('torch', '?')} (CPU; "
        f"{facts.get('threads', '?')} threads by default, bench_timing and bench_compile set 1) |",
        f"| capture engine | {facts.get('core', facts.get('error', '?'))}; `GRAPHWIDGET_NATIVE`="
        f"{os.environ.get('GRAPHWIDGET_NATIVE', '(unset)')} |",
        f"| browser | {_run([chromium, '--version']) if chromium else 'no chromium: browser benchmarks fail'} |",
        f"| graphwidget, plotly | {facts.get('graphwidget', '?')}, {facts.get('plotly', '?')} |",
        "",
        "## Sizes",
        "",
        "| what | size |",
        "|---|---|",
        *_sizes(),
        "",
    ]
    a.out.write_text("\n".join(head + sections).rstrip() + "\n", encoding="utf-8")
    print(f"[report] wrote {a.out} in {total:.0f} s", flush=True)


def _split_sections(text: str) -> Tuple[List[str], Dict[str, List[str]], List[str]]:
    """The file's lines before its first benchmark section, each section's lines by title, and the titles in order.
    A benchmark section is a ``## `` heading after ``## Sizes``, outside code blocks."""
    lines = text.rstrip("\n").split("\n")
    head: List[str] = []
    by_title: Dict[str, List[str]] = {}
    order: List[str] = []
    current: Optional[str] = None
    past_sizes = False
    fenced = False  # a script's own "## " lines sit inside its ```text blocks: they are not sections
    for line in lines:
        if line.startswith("```"):
            fenced = not fenced
        if line.startswith("## ") and not fenced:
            title = line[3:].strip()
            if past_sizes:
                current = title
                order.append(title)
                by_title[title] = []
            elif title == "Sizes":
                past_sizes = True
        if current is None:
            head.append(line)
        else:
            by_title[current].append(line)
    return head, by_title, order


def update(out: Path, chosen: List[Bench], sections: List[str], started: "_dt.datetime", commit: str,
           full: bool) -> None:
    """Replace the chosen benchmarks' sections of ``out`` with the new ones (new ones go where the benchmark list
    puts them), keep every other section, and add a line to the file's "This run" table saying what was rerun."""
    head, old, old_order = _split_sections(out.read_text(encoding="utf-8"))
    _, new, new_order = _split_sections("## Sizes\n" + "\n".join(sections))
    want = [t for b in BENCHES for t in (b.title, f"{b.title}, at a million nodes")]
    merged = {**old, **new}
    # the benchmarks' sections in the list's order, then any other section the file had, once each
    order = list(dict.fromkeys([t for t in want if t in merged] + [t for t in old_order + new_order if t not in want]))
    note = (f"| updated | {started:%Y-%m-%d %H:%M} UTC at {commit or 'unknown'}, {'full' if full else 'quick'}: "
            f"{', '.join(b.key for b in chosen)} (`report.py --update`; every other section is from the run "
            "above or an earlier update: each section says when it ran) |")
    keys = {b.key for b in chosen}

    def superseded(line: str) -> bool:  # an earlier update whose every section this run replaces
        if not line.startswith("| updated |") or ": " not in line or " (`report.py" not in line:
            return False
        listed = line.split(" (`report.py", 1)[0].rsplit(": ", 1)[-1].split(", ")
        return set(listed) <= keys

    head = [line for line in head if not superseded(line)]
    at = next((i for i, line in enumerate(head) if line.startswith("## Sizes")), len(head))
    while at > 0 and not head[at - 1].strip():
        at -= 1
    head.insert(at, note)
    body: List[str] = []
    for t in order:
        body += merged[t]
        if body and body[-1].strip():
            body.append("")
    out.write_text("\n".join(head + body).rstrip() + "\n", encoding="utf-8")
    print(f"[report] updated {', '.join(new_order)} in {out}", flush=True)


if __name__ == "__main__":
    main()
