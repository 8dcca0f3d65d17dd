"""One rank of the distributed tests (tests/test_ranks.py launches it with torchrun --nproc_per_node=4, gloo).

``python -m torch.distributed.run --standalone --nproc_per_node=4 tests/dist_worker.py SCENARIO[,SCENARIO...] OUT_DIR``:
every rank runs each SCENARIO in turn and writes what it saw to ``OUT_DIR/result<rank>.json``, or
``OUT_DIR/SCENARIO/result<rank>.json`` when there are several. It exits 0 even when graphwidget raised, so that
torchrun does not kill the other ranks: the test wants to see how each one stopped. Rank 0 also
writes the RankSet's record and the N-way export. Line numbers the test checks are marked ``# LINE:<name>``.
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

import graphwidget as gw


class Slow(torch.autograd.Function):
    """The same node on every rank; on the slow rank its forward sleeps (a rank made slow on purpose)."""

    delay = 0.0

    @staticmethod
    def forward(ctx, x):  # type: ignore[override]
        if Slow.delay:
            time.sleep(Slow.delay)
        return x * 1.0

    @staticmethod
    def backward(ctx, g):  # type: ignore[override]
        return g


class Net(torch.nn.Module):
    def __init__(self, skip_extra_on: int = -1) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.extra = torch.nn.Linear(32, 32)
        self.fc2 = torch.nn.Linear(32, 4)
        self.skip_extra_on = skip_extra_on

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        h = Slow.apply(h)
        if x.mean() > 0.5:  # data-dependent: only rank 2's batch takes it
            h = h * 2  # LINE:branch
        if dist.get_rank() != self.skip_extra_on:
            h = h + torch.tanh(self.extra(h))
        else:
            h = h + 0.5  # LINE:skip
        return self.fc2(h)


class Sleepy(torch.nn.Module):
    """A module whose forward sleeps on the slow rank: time in Python, inside no node."""

    delay = 0.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if Sleepy.delay:
            time.sleep(Sleepy.delay)  # LINE:sleep
        return x


class SleepyNet(torch.nn.Module):
    def __init__(self, skip_extra_on: int = -1) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.pause = Sleepy()
        self.extra = torch.nn.Linear(32, 32)
        self.fc2 = torch.nn.Linear(32, 4)
        self.skip_extra_on = skip_extra_on

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.pause(torch.relu(self.fc1(x)))
        if dist.get_rank() != self.skip_extra_on:
            h = h + torch.tanh(self.extra(h))
        return self.fc2(h)


def ordered_mean(state, bucket):  # type: ignore[no-untyped-def]  # DDP reads (string) annotations: none
    """A DDP communication hook that averages in a fixed order (bit-reproducible, unlike gloo's allreduce)."""
    t = bucket.buffer()
    parts = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, t)
    total = parts[0].clone()
    for p in parts[1:]:
        total += p
    fut: torch.futures.Future = torch.futures.Future()
    fut.set_result(total / len(parts))
    return fut


def batch(rank: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(100 + rank)
    x = torch.rand(8, 16, generator=g) * 0.5  # mean about 0.25
    if rank == 2:
        x = x + 0.75  # mean about 1: the branch
    return x


def line_of(name: str) -> str:
    for i, text in enumerate(Path(__file__).read_text().splitlines(), 1):
        if text.rstrip().endswith(f"# LINE:{name}"):
            return f"{Path(__file__).name}:{i}"
    raise KeyError(name)


def main(scenarios: str, out: Path) -> None:
    """Run each of the comma-separated ``scenarios`` in turn in one process group (one torchrun, one torch import
    per rank for all of them). With one scenario the results go to ``out``, with several to ``out/<scenario>``."""
    dist.init_process_group("gloo", timeout=timedelta(seconds=float(os.environ.get("GW_PG_TIMEOUT", "120"))))
    names = scenarios.split(",")
    for scenario in names:
        if len(names) > 1:
            dist.barrier()  # every rank has finished the previous scenario
        one(scenario, out / scenario if len(names) > 1 else out)
    if "raise" not in names:
        try:
            dist.destroy_process_group()
        except Exception:  # noqa: BLE001
            pass


def one(scenario: str, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)  # the same initial weights on every rank (DDP checks it)
    result: dict = {"rank": rank, "scenario": scenario,
                    "lines": {k: line_of(k) for k in ("branch", "skip", "sleep")}}
    t0 = time.monotonic()
    try:
        result.update(run(scenario, rank, world, out, result))
    except BaseException as exc:  # noqa: BLE001 - report how this rank stopped
        result.update(raised=type(exc).__name__, message=str(exc), traceback=traceback.format_exc()[-3000:])
    result["seconds"] = time.monotonic() - t0
    result["ended_at"] = time.time()
    (out / f"result{rank}.json").write_text(json.dumps(result, default=str))


def run(scenario: str, rank: int, world: int, out: Path, res: dict) -> dict:
    if scenario in ("diverge", "slow", "unused", "raise"):
        model = Net(skip_extra_on=1 if scenario == "unused" else -1)
        ddp = torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=scenario == "unused")
        x = batch(rank)
        Slow.delay = 0.25 if scenario == "slow" and rank == 3 else 0.0
        calls = [0]

        def step(inp: torch.Tensor) -> torch.Tensor:
            calls[0] += 1
            if scenario == "raise" and rank == 2 and calls[0] == 3:
                res["raised_at"] = time.time()
                raise ValueError("rank 2 broke on purpose")  # LINE:raise
            return ddp(inp).pow(2).mean()

        # the diverging job also has every rank write its graph where `python -m graphwidget ranks` reads it. Five
        # repeats: per-node medians then need three runs of one node slowed on one rank (four ranks share two cores
        # with the rest of the suite, and a rank preempted inside a node in two of three runs was once the straggler)
        got = gw.profile(step, x, module=ddp, repeat=5, ranks=gw.Ranks(
            "all", timeout=60, dir=out / "written" if scenario == "diverge" else None))
        res["returned"] = type(got).__name__
        if rank == 0:
            rec = got.record(got.default_shown())
            res["record"] = rec
            res["sentence"] = got.sentence()
            res["report"] = got.report()
            d = got.nway()
            d.export_html(out / "ranks.html")
            (out / "nway.json").write_text(d.to_json())
            got.save(out / "files")
    elif scenario in ("sleepy", "same"):
        # DDP called as step(model, batch): the model is a positional argument, no module= given. "sleepy": the last
        # rank sleeps GW_DELAY_MS in a module's forward and rank 1 leaves `extra` unused; "same": identical ranks
        delay = float(os.environ.get("GW_DELAY_MS", "50")) / 1e3
        model = SleepyNet(skip_extra_on=1 if scenario == "sleepy" and world > 1 else -1)
        ddp = torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=scenario == "sleepy")
        Sleepy.delay = delay if scenario == "sleepy" and rank == world - 1 else 0.0
        x = batch(rank if scenario == "sleepy" else 0) * 0.5

        def step2(m: torch.nn.Module, inp: torch.Tensor) -> torch.Tensor:
            return m(inp).pow(2).mean()

        got = gw.profile(step2, ddp, x, repeat=5, ranks=gw.Ranks("all", timeout=60))
        res["returned"] = type(got).__name__
        if rank == 0:
            res["record"] = got.record(got.default_shown())
            res["sentence"] = got.sentence()
            res["report"] = got.report()
    elif scenario == "raise_nocomm":
        # no collective inside the step: the other ranks reach graphwidget's wait and must stop at once
        w = torch.randn(16, 4, requires_grad=True)

        def plain(inp: torch.Tensor) -> torch.Tensor:
            if rank == 2:
                res["raised_at"] = time.time()
                raise ValueError("rank 2 broke on purpose")  # LINE:raise2
            return (inp @ w).sum()

        gw.profile(plain, batch(rank), repeat=2, ranks=gw.Ranks("all", timeout=60))
    elif scenario == "hang":
        w = torch.randn(16, 4, requires_grad=True)
        if rank == min(2, world - 1):
            time.sleep(20)  # reaches graphwidget long after the others' timeout
        gw.profile(lambda inp: (inp @ w).sum(), batch(rank), repeat=2, ranks=gw.Ranks("all", timeout=6))
    elif scenario == "grads":
        model = Net()
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        # gloo's own allreduce is not bit-reproducible from one call to the next with 4 ranks (two plain steps
        # differ in the last bits), so "bit-identical" is checked under a reduction that is: gather every rank's
        # bucket, sum in rank order
        ddp.register_comm_hook(None, ordered_mean)
        x = batch(rank)

        def step(inp: torch.Tensor) -> torch.Tensor:
            return ddp(inp).pow(2).mean()

        step(x).backward()
        plain = [p.grad.clone() for p in model.parameters()]
        store = dist.distributed_c10d._get_default_store()
        for p in model.parameters():
            p.grad = None
        step(x).backward()
        res["plain_twice_equal"] = all(torch.equal(a, p.grad) for a, p in zip(plain, model.parameters()))
        for p in model.parameters():
            p.grad = None
        keys = store.num_keys()
        g = gw.profile(step, x, module=ddp, repeat=3)  # ranks=None: nothing gathered
        from graphwidget.experiment import ranks as gw_ranks
        # no store key, no process group of graphwidget's, no file, and the plain graph
        res["nothing_gathered"] = store.num_keys() == keys and not gw_ranks._groups and \
            not list(out.glob("**/rank*.json")) and isinstance(g, gw.GradGraph) and "rank" not in g.meta
        res["same_grads_plain"] = all(torch.equal(a, p.grad) for a, p in zip(plain, model.parameters()))
        for p in model.parameters():
            p.grad = None
        got = gw.profile(step, x, module=ddp, repeat=3, ranks="all", )
        res["same_grads_ranks"] = all(torch.equal(a, p.grad) for a, p in zip(plain, model.parameters()))
        res["returned"] = type(got).__name__
        for via in ("object", "files"):
            for p in model.parameters():
                p.grad = None
            got = gw.trace(step, x, module=ddp, ranks=gw.Ranks("all", via=via, dir=out / f"via-{via}"))
            if rank == 0:
                res[f"trace_{via}"] = [type(got).__name__, got.ranks, got.gather["via"]]
    else:
        raise SystemExit(f"unknown scenario {scenario}")
    return res


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
