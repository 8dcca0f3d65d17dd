"""What gathering one graph per rank to rank 0 costs: 4 ranks × a ~100k-node graph, object gather vs files.

Run: .venv/bin/python tests/bench/bench_gather.py [--quick] [--nodes 100000] [--ranks 4] [--repeat 3]
(``--quick``: 10k-node graphs.)

The graph is a real autograd graph (a deep nn.TransformerEncoder, ~55 nodes a layer, captured once with
gw.trace and written to a temporary file); torchrun starts ``--ranks`` processes on gloo (CPU), each reads it and
hands it to graphwidget's gather (``graphwidget.experiment.ranks.gathered``, what ``gw.profile(..., ranks="all")``
runs after the step) ``--repeat`` times per transport, all ranks starting together (a barrier). Columns, medians
over the repeats, seconds, from rank 0:

* ``to_json``: rank 0 writing its own graph's JSON (every rank does the same, at the same time);
* ``write``: rank 0 writing its file (files only; an atomic rename in a temporary folder on the local disk);
* ``wait``: waiting for every rank's status in the store (how far apart the ranks finished);
* ``move``: the transfer — ``torch.distributed.gather_object`` on graphwidget's gloo group, or rank 0 reading the
  other ranks' files;
* ``parse``: rank 0 reading the others' graphs back (``gw.load_json``: validation, then the graph);
* ``total``: gathered() as a whole on rank 0. Besides the columns it holds building the RankSet and, with the
  pure-Python engine, the garbage collector's first pass over the graphs just read (``load_json`` pauses the
  collector; the compiled core untracks what it builds, pure Python cannot, so the pass comes at the next
  allocations).

``MB moved`` is the JSON of every gathered graph, rank 0's own included.

No target: the numbers say which transport to default to. The capture engine (compiled core or pure Python)
writes and reads the JSON, so it is said with the numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def make_graph(nodes: int, path: Path) -> int:
    import torch

    import graphwidget as gw
    layers = max(2, nodes // 55)
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    enc = torch.nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)
    x = torch.randn(2, 5, 16)
    g = gw.trace(lambda t: enc(t).sum(), x, module=enc, title="transformer")
    path.write_text(g.to_json(), encoding="utf-8")
    return len(g)


def worker(graph_file: str, repeat: int, out: str) -> None:
    import torch.distributed as dist

    import graphwidget as gw
    from graphwidget.experiment.ranks import Ranks, gathered
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    g = gw.load_json(Path(graph_file).read_bytes())
    rows: Dict[str, List[Dict[str, Any]]] = {"object": [], "files": []}
    with tempfile.TemporaryDirectory(prefix="gw-gather-") as tmp:
        for k in range(repeat):
            for via in ("object", "files"):
                dist.barrier()
                t0 = time.perf_counter()
                rs = gathered(lambda: g, None, None, Ranks("all", via=via, dir=Path(tmp) / f"{via}{k}"
                                                          if via == "files" else None), "bench")
                total = time.perf_counter() - t0
                dist.barrier()
                if rank == 0:
                    rows[via].append({**rs.gather, "total_s": total, "nodes": len(g), "ranks": len(rs)})
                del rs
    if rank == 0:
        Path(out).write_text(json.dumps(rows))
    dist.destroy_process_group()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--nodes", type=int, default=None)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--worker", nargs=3, metavar=("GRAPH", "REPEAT", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], int(args.worker[1]), args.worker[2])
        return
    nodes = args.nodes or (10_000 if args.quick else 100_000)
    from graphwidget.capturing.native import engine
    core = "compiled core" if engine.load_core() is not None else "pure Python"
    with tempfile.TemporaryDirectory(prefix="gw-bench-gather-") as tmp:
        gfile, out = Path(tmp) / "graph.json", Path(tmp) / "rows.json"
        t = time.perf_counter()
        n = make_graph(nodes, gfile)
        print(f"graph: {n} nodes, {gfile.stat().st_size / 1e6:.1f} MB of JSON (made in {time.perf_counter() - t:.0f} s);"
              f" {args.ranks} ranks on gloo; JSON by the {core}")
        load0 = os.getloadavg()[0]
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={args.ranks}",
               str(Path(__file__).resolve()), "--worker", str(gfile), str(args.repeat), str(out)]
        proc = subprocess.run(cmd, env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stderr[-3000:])
            raise SystemExit(1)
        rows = json.loads(out.read_text())
        load1 = os.getloadavg()[0]
    cols = ("serialize_s", "write_s", "wait_s", "transfer_s", "parse_s", "total_s")
    print(f"load average {load0:.1f} before, {load1:.1f} after ({os.cpu_count()} cores); medians of "
          f"{args.repeat} gathers, seconds on rank 0")
    print()
    print("| transport | MB moved | to_json | write | wait | move | parse | total |")
    print("|---|---|---|---|---|---|---|---|")
    for via, rs in rows.items():
        med = {c: statistics.median(r[c] for r in rs) for c in cols}
        mb = rs[0]["bytes"] / 1e6
        print(f"| {via} | {mb:.0f} | " + " | ".join(f"{med[c]:.2f}" for c in cols) + " |")


if __name__ == "__main__":
    main()
