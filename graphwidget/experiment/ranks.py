"""``gw.profile(step, *args, ranks="all")`` and ``gw.trace(..., ranks="all")`` under ``torch.distributed``: every rank
captures (and times) its own step as ``ranks=None`` would, then the graphs are gathered to rank 0, which gets a
:class:`~graphwidget.analysis.ranks.RankSet`; every other rank gets its own graph.

Nothing here runs when ``ranks`` is None: no store key, no collective, no file.

**It must not hang, nor change training.** The step runs exactly as without ``ranks`` (the same
:func:`graphwidget.profile`: each leaf's ``.grad`` ends as one plain backward leaves it). Then, before any collective,
each rank posts its status in the job's store (the key-value store ``init_process_group`` set up; one small key per
rank and call): ``ok``, or the error its step raised. Each rank waits for every status, up to ``timeout`` seconds,
and stops at once with :class:`RankError` when a rank reports an error — naming the rank, its exception and the line
that raised — or at the timeout, naming the ranks that never arrived. Only when every rank is fine do the graphs
move. A rank whose step raises posts its error and re-raises at once, without waiting; if another rank failed
before it (a collective broken by a rank that died), it raises :class:`RankError` naming that rank first.

**How the graphs move** (``Ranks(via=...)``): ``"object"`` — ``torch.distributed.gather_object`` of each graph's JSON
text on a gloo group of graphwidget's own, created once with ``timeout`` (CPU tensors whatever the job's backend, so
NCCL jobs gather without touching GPU memory); ``"files"`` — each rank writes ``dir/rank00002.json`` (an atomic
rename) before posting its status, and rank 0 reads them: no collective at all, but ``dir`` must be one folder every
rank sees (a shared file system across nodes). ``"auto"``: files when ``dir`` is given, else the object gather.
With ``dir`` every rank writes its file either way (``python -m graphwidget ranks DIR`` reads them).
"""
from __future__ import annotations

import json
import os
import socket
import time
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Union, overload

import torch

from .._util.keywords import refuse_if_shadowed
from ..analysis.ranks import RankSet, rank_file
from ..attribution.trace import trace_call
from ..model.graph import GradGraph
from ..profiling.runner import run_profile

__all__ = ["Ranks", "RankError", "profile", "trace"]

#: Seconds a rank waits for the others' statuses, and the object gather's own timeout.
TIMEOUT = 300.0
VIA = ("auto", "object", "files")
_KEY = "graphwidget.ranks"  # the prefix of this module's keys in the process group's store
_calls = [0]
_groups: Dict[float, Any] = {}


class RankError(RuntimeError):
    """Another rank failed (or never arrived) while graphs were being gathered; ``ranks``: which, ``errors``: rank ->
    what it reported (``None`` for one that never arrived)."""

    def __init__(self, message: str, ranks: Sequence[int], errors: Dict[int, Optional[str]]) -> None:
        super().__init__(message)
        self.ranks = list(ranks)
        self.errors = dict(errors)


class Ranks:
    """Options of ``ranks=``: ``which`` (``"all"`` or a list of ranks whose graphs are gathered; every rank still
    takes part), ``via`` (``"auto"``, ``"object"``, ``"files"``), ``dir`` (a folder every rank sees: each writes its
    graph there), ``timeout`` (seconds to wait for the other ranks), ``dst`` (the rank that gathers)."""

    def __init__(self, which: Any = "all", *, via: str = "auto", dir: Any = None, timeout: float = TIMEOUT,
                 dst: int = 0) -> None:
        self.which, self.via, self.dir, self.timeout, self.dst = which, via, dir, timeout, dst

    def __repr__(self) -> str:
        return (f"Ranks({self.which!r}, via={self.via!r}, dir={self.dir!r}, timeout={self.timeout!r}, "
                f"dst={self.dst!r})")


def _options(ranks: Any, who: str) -> Ranks:
    opts = ranks if isinstance(ranks, Ranks) else Ranks(ranks)
    w = opts.which
    if not (w == "all" or (isinstance(w, (list, tuple, range)) and w and
                           all(isinstance(r, int) and not isinstance(r, bool) and r >= 0 for r in w))):
        raise ValueError(f"{who}: ranks must be None (nothing gathered), \"all\", a list of ranks, or "
                         f"gw.Ranks(...); got {w!r:.80}.")
    if opts.via not in VIA:
        raise ValueError(f"{who}: Ranks(via=...) must be one of {', '.join(map(repr, VIA))}; got {opts.via!r}.")
    if opts.via == "files" and opts.dir is None:
        raise ValueError(f"{who}: Ranks(via='files') needs dir=, a folder every rank sees.")
    if not isinstance(opts.timeout, (int, float)) or isinstance(opts.timeout, bool) or not opts.timeout > 0:
        raise ValueError(f"{who}: Ranks(timeout=...) must be a number of seconds > 0; got {opts.timeout!r}.")
    return opts


def _dist(who: str) -> Any:
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError(f"{who}: ranks= gathers graphs across the ranks of a torch.distributed job, but no "
                           f"process group is initialised here; call torch.distributed.init_process_group() first "
                           f"(torchrun sets up the rest), or leave ranks=None.")
    return dist


@overload
def profile(fn: Callable[..., Any], *args: Any, ranks: None = ..., **kwargs: Any) -> GradGraph: ...
@overload
def profile(fn: Callable[..., Any], *args: Any, ranks: Any, **kwargs: Any) -> Union[GradGraph, RankSet]: ...
def profile(fn: Callable[..., Any], *args: Any, ranks: Any = None, **kwargs: Any) -> Any:
    """:func:`graphwidget.profiling.run_profile` — its arguments and result unchanged when ``ranks`` is None. With
    ``ranks="all"`` (or a list of ranks, or :class:`Ranks`), inside a ``torch.distributed`` job: every rank profiles
    its step, and the graphs are gathered to rank 0, which returns a :class:`~graphwidget.RankSet`; the other ranks
    return their own graph (module docstring: what happens when a rank raises or hangs). With ``ranks``, ``stat``
    defaults to ``"median"``: per-node medians over the repeats, robust to a run one rank lost to the machine."""
    if ranks is None:
        return run_profile(fn, *args, **kwargs)
    refuse_if_shadowed("graphwidget.profile", fn, ["ranks"])
    opts = _options(ranks, "graphwidget.profile")
    # Ranks are compared node by node: per-node medians over the repeats, so that one run a rank spent descheduled
    # (or, under DDP, waiting inside a node's hook) does not make it the straggler. stat= still chooses.
    kwargs.setdefault("stat", "median")
    return gathered(lambda: run_profile(fn, *args, **kwargs), fn, kwargs.get("module"), opts, "graphwidget.profile",
                    args, kwargs)


@overload
def trace(fn: Callable[..., Any], *args: Any, ranks: None = ..., **kwargs: Any) -> GradGraph: ...
@overload
def trace(fn: Callable[..., Any], *args: Any, ranks: Any, **kwargs: Any) -> Union[GradGraph, RankSet]: ...
def trace(fn: Callable[..., Any], *args: Any, ranks: Any = None, **kwargs: Any) -> Any:
    """:func:`graphwidget.attribution.trace_call`, with ``ranks`` as for :func:`profile` (graphs without times)."""
    if ranks is None:
        return trace_call(fn, *args, **kwargs)
    refuse_if_shadowed("graphwidget.trace", fn, ["ranks"])
    opts = _options(ranks, "graphwidget.trace")
    return gathered(lambda: trace_call(fn, *args, **kwargs), fn, kwargs.get("module"), opts, "graphwidget.trace",
                    args, kwargs)


def _with_ranks(fn: Any, stage: Any) -> None:
    """``fn`` documented and signed as the stage function plus ``ranks=None`` (what help() and editors show)."""
    import inspect
    sig = inspect.signature(stage)
    params = list(sig.parameters.values())
    at = next(i for i, p in enumerate(params) if p.kind is inspect.Parameter.VAR_KEYWORD)
    params.insert(at, inspect.Parameter("ranks", inspect.Parameter.KEYWORD_ONLY, default=None))
    fn.__signature__ = sig.replace(parameters=params, return_annotation="GradGraph | RankSet")
    fn.__doc__ = f"{fn.__doc__}\n\n{stage.__doc__}"


_with_ranks(profile, run_profile)
_with_ranks(trace, trace_call)


# -- one rank's side ---------------------------------------------------------------------------------------------------
def _where(exc: BaseException) -> str:
    """``"ValueError: boom (train.py:42 in step)"``: the exception and the user's line that raised it (the innermost
    frame outside torch and graphwidget)."""
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if "/torch/" not in f.filename and "/graphwidget/" not in f.filename]
    pick = mine or list(frames)
    where = f" ({pick[-1].filename}:{pick[-1].lineno} in {pick[-1].name})" if pick else ""
    return f"{type(exc).__name__}: {str(exc)[:300]}{where}"


def unused_parameters(fn: Any, module: Any, g: GradGraph, args: Sequence[Any] = (),
                      kwargs: Optional[Dict[str, Any]] = None) -> Optional[List[str]]:
    """The parameters (requiring grad) of the modules the step reaches — ``module``, or ``fn`` and what it reaches
    through closures and globals, and the ``nn.Module`` arguments it was given (DDP as ``step(model, batch)``;
    one such argument is named as ``module=`` would be, several by position or keyword) — that no node of ``g``
    reads (named as :func:`graphwidget.compare` names them); ``None`` when no module was found (unknown, not
    none)."""
    from ..profiling.checks import select_roots
    from .naming import Namer, leaf_tensors
    namer = Namer()
    if isinstance(module, torch.nn.Module):
        namer.module("", module)
    else:
        namer.scan_function(fn)
        given = [(f"args[{i}]", a) for i, a in enumerate(args) if isinstance(a, torch.nn.Module)] + \
            [(k, a) for k, a in (kwargs or {}).items() if isinstance(a, torch.nn.Module)]
        for name, m in given:
            namer.module("" if len(given) == 1 else name, m)
    params = [(n, t) for n, t in namer.items if isinstance(t, torch.nn.Parameter) and t.requires_grad]
    if not params:
        return None
    roots = select_roots(g.output) if g.output is not None else None
    used = {id(t) for t in leaf_tensors(roots or [])}
    return [n for n, t in params if id(t) not in used]


def gathered(run: Callable[[], GradGraph], fn: Any, module: Any, opts: Ranks, who: str, args: Sequence[Any] = (),
             kwargs: Optional[Dict[str, Any]] = None) -> Any:
    """Run the step on this rank, then gather (module docstring)."""
    dist = _dist(who)
    rank, world = dist.get_rank(), dist.get_world_size()
    if not 0 <= opts.dst < world:
        raise ValueError(f"{who}: Ranks(dst={opts.dst}) is not a rank of this job (world size {world}).")
    which = list(range(world)) if opts.which == "all" else sorted(set(opts.which))
    bad = [r for r in which if r >= world]
    if bad:
        raise ValueError(f"{who}: ranks={opts.which!r} names rank {bad[0]}, but the world size is {world}.")
    store = dist.distributed_c10d._get_default_store()
    _calls[0] += 1
    call = _calls[0]
    prefix = f"{_KEY}/{call}"
    _forget(store, call - 2, rank)  # every rank is past call - 2 by now (it posted call - 1 after it)
    try:
        g = run()
    except BaseException as exc:
        _post(store, prefix, rank, {"error": _where(exc), "t": time.time()})
        first = _failed_before(store, prefix, world, rank)
        if first is not None:
            r, what = first
            raise RankError(f"{who}: rank {r} failed first ({what}); this rank (rank {rank}) then stopped with "
                            f"{type(exc).__name__}: {str(exc)[:300]}", [r], {r: what}) from exc
        raise
    info: Dict[str, Any] = {"rank": rank, "world_size": world, "host": socket.gethostname(), "pid": os.getpid(),
                            "backend": str(dist.get_backend()), "call": call}
    try:
        info["unused"] = unused_parameters(fn, module, g, args, kwargs)
    except Exception as exc:  # noqa: BLE001 - what is unused is extra information, never worth a lost gather
        info["unused"] = None
        info["unused_error"] = f"{type(exc).__name__}: {exc}"
    g.meta["rank"] = info
    via = opts.via if opts.via != "auto" else ("files" if opts.dir is not None else "object")
    clock = [time.perf_counter()]

    def lap() -> float:
        """Seconds since the previous lap."""
        now = time.perf_counter()
        took, clock[0] = now - clock[0], now
        return round(took, 4)

    text = g.to_json() if rank in which else None
    serialize_s = lap()
    status: Dict[str, Any] = {"ok": True, "t": time.time(), "bytes": len(text) if text is not None else 0}
    if opts.dir is not None and text is not None:
        status["file"] = str(_write(Path(opts.dir), rank, text))
    write_s = lap()
    _post(store, prefix, rank, status)
    statuses = _wait_all(store, prefix, world, rank, opts.timeout, who)
    wait_s = lap()
    if via == "object":
        got: Optional[List[Any]] = [None] * world if rank == opts.dst else None
        try:
            dist.gather_object(text, got, dst=opts.dst, group=_group(dist, opts.timeout))
        except Exception as exc:  # a rank that left between its status and the gather
            raise RankError(f"{who}: gathering the graphs failed on rank {rank} ({type(exc).__name__}: "
                            f"{str(exc)[:300]}) although every rank had finished its step; a rank may have "
                            f"exited in between.", [], {}) from exc
        texts = {r: got[r] for r in which} if got is not None else {}
    elif rank == opts.dst:
        texts = {r: _read(statuses[r], r, who) for r in which}
    else:
        texts = {}
    transfer_s = lap()
    if rank != opts.dst:
        return g
    from ..model.io import graph_from_json
    graphs = {r: (g if r == rank else graph_from_json(t)) for r, t in texts.items()}
    for r, gr in graphs.items():
        if r != rank:
            gr.meta.setdefault("rank", {"rank": r})
    parse_s = lap()
    return RankSet(graphs, world_size=world,
                   gather={"via": via, "bytes": sum(int(statuses[r].get("bytes") or 0) for r in which),
                           "serialize_s": serialize_s, "write_s": write_s, "wait_s": wait_s,
                           "transfer_s": transfer_s, "parse_s": parse_s,
                           "seconds": round(serialize_s + write_s + transfer_s + parse_s, 4)})


def _post(store: Any, prefix: str, rank: int, status: Dict[str, Any]) -> None:
    try:
        store.set(f"{prefix}/{rank}", json.dumps(status))
    except Exception:  # noqa: BLE001 - a store that is gone: the waits below say so
        pass


def _status(store: Any, prefix: str, r: int) -> Optional[Dict[str, Any]]:
    key = f"{prefix}/{r}"
    if not store.check([key]):
        return None
    got = json.loads(bytes(store.get(key)).decode("utf-8"))
    return got if isinstance(got, dict) else {"error": "unreadable status"}


def _failed_before(store: Any, prefix: str, world: int, rank: int) -> Optional[tuple]:
    """The other rank that reported an error first, if any (looked up once: a failing rank never waits)."""
    found = []
    try:
        for r in range(world):
            if r != rank:
                s = _status(store, prefix, r)
                if s is not None and s.get("error"):
                    found.append((float(s.get("t") or 0.0), r, str(s["error"])))
    except Exception:  # noqa: BLE001
        return None
    if not found:
        return None
    _, r, what = min(found)
    return r, what


def _wait_all(store: Any, prefix: str, world: int, rank: int, timeout: float, who: str) -> Dict[int, Dict[str, Any]]:
    """Every rank's status; :class:`RankError` as soon as one reports an error, or at the timeout."""
    deadline = time.monotonic() + timeout
    got: Dict[int, Dict[str, Any]] = {}
    pause = 0.005
    while True:
        try:
            for r in range(world):
                if r not in got:
                    s = _status(store, prefix, r)
                    if s is not None:
                        got[r] = s
        except Exception as exc:  # noqa: BLE001 - the store went away (its host rank exited)
            raise RankError(f"{who}: rank {rank} lost the job's store while waiting for the other ranks "
                            f"({type(exc).__name__}: {exc}); the rank that hosts it (usually rank 0, or the "
                            f"torchrun agent) has probably exited.", [], {}) from exc
        errors = {r: str(s["error"]) for r, s in got.items() if s.get("error")}
        late = sorted(r for r, s in got.items() if s.get("gave_up"))
        if late:
            raise RankError(f"{who}: ranks {late} stopped waiting for the other ranks (their timeout passed before "
                            f"this rank, rank {rank}, finished its step); nothing was gathered. Ranks(timeout=...) "
                            f"sets the wait.", late, {r: errors.get(r) for r in late})
        if errors:
            first = min(errors, key=lambda r: float(got[r].get("t") or 0.0))
            missing = [r for r in range(world) if r not in got]
            # only what is known: they had not posted a status; where they are (a collective or not) is not known
            tail = (f"; ranks {missing} had not finished their step (no status posted; where they are is not known)"
                    if missing else "")
            raise RankError(f"{who}: rank {first} raised {errors[first]}" +
                            (f" (and ranks {sorted(set(errors) - {first})} too)" if len(errors) > 1 else "") +
                            f"; this rank (rank {rank}) stops too, nothing was gathered{tail}.",
                            sorted(errors), {**{r: None for r in missing}, **errors})
        if len(got) == world:
            return got
        if time.monotonic() > deadline:
            missing = [r for r in range(world) if r not in got]
            # said in the store too, so that a rank arriving later stops at once instead of waiting for us
            _post(store, prefix, rank, {"error": f"rank {rank} stopped waiting for ranks {missing} after {timeout:g} s",
                                        "gave_up": missing, "t": time.time()})
            raise RankError(f"{who}: ranks {missing} did not finish their step within {timeout:g} s of rank {rank} "
                            f"and posted no status (no error either: they are still running, blocked, or gone "
                            f"without a Python exception; nothing more is known); nothing was gathered. "
                            f"Ranks(timeout=...) sets the wait.", missing,
                            {r: None for r in missing})
        time.sleep(pause)
        pause = min(0.2, pause * 2)


def _forget(store: Any, call: int, rank: int) -> None:
    if call < 1:
        return
    try:
        store.delete_key(f"{_KEY}/{call}/{rank}")
    except Exception:  # noqa: BLE001 - a store without deletion keeps a few bytes
        pass


def _group(dist: Any, timeout: float) -> Any:
    """graphwidget's own gloo group (created once per timeout; every rank is here, so the collective creation is
    safe): CPU tensors whatever the job's backend, and our timeout rather than the job's."""
    g = _groups.get(timeout)
    if g is None:
        g = _groups[timeout] = dist.new_group(backend="gloo", timeout=timedelta(seconds=timeout))
    return g


def _write(folder: Path, rank: int, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / rank_file(rank)
    tmp = folder / f".{rank_file(rank)}.{os.getpid()}.tmp"
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # readers see the whole file or none
    return path


def _read(status: Dict[str, Any], rank: int, who: str) -> str:
    path = status.get("file")
    try:
        return Path(str(path)).read_text(encoding="utf-8")
    except OSError as exc:
        raise RankError(f"{who}: rank {rank} wrote its graph to {path}, which this rank cannot read ({exc}); "
                        f"Ranks(dir=...) must be a folder every rank sees (the same path on every node).",
                        [rank], {rank: None}) from exc
