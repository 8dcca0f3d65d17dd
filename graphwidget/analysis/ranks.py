"""One graph per rank of a distributed job, compared: :class:`RankSet` (torch-free).

``gw.profile(step, *args, ranks="all")`` captures and times the step on every rank and gathers the graphs to rank 0
(``graphwidget/experiment/ranks.py``); ``python -m graphwidget ranks DIR`` reads the graphs each rank wrote. Either
way a RankSet answers three questions:

* **Who holds the others back?** Per node of the reference graph, the time (forward + backward) on every rank: min,
  median, max, the slowest rank and the spread (max − min). Per rank, its *compute* — the time inside nodes, forward
  ops plus backward nodes, but for gradient accumulation (:data:`NOT_COMPUTE`: where DDP's hooks launch the
  allreduce) — and the rest of its step (``wait_ms``: the engine's own work and, under DDP, waiting for
  the other ranks' gradients). Wall time would mislead here: a fast rank waits for the slow one inside its backward,
  so every rank's step lasts as long as the slowest. The straggler is the rank with the most compute, when it is
  clearly above the median (:data:`STRAGGLER_SHARE`), with the node where it loses the most.
* **Do all ranks build the same graph?** Ranks are grouped by structure (ops in id order and edges). The largest
  group is the reference (ties: the group of the lowest rank) and its lowest rank the reference rank. Every other
  rank is matched to it (:mod:`.diff.match`): its extra and missing nodes and the source line where its graph parts
  from the others (the first such node the forward created). Divergent graphs are a known cause of DDP hangs and of
  "unused parameters" errors.
* **Which parameters got no gradient on which rank?** Each rank records the parameters of its modules that no
  node reads (``meta.rank.unused``).

Identical structures share node ids (ids are the deterministic pre-order walk from the roots), so per-node times
line up without matching; only a divergent rank is matched.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .._util.stats import median
from ..model.graph import GradGraph
from .rank_words import STRAGGLER_FLOOR_MS, STRAGGLER_SHARE, ranks_report, ranks_sentence

#: File names of the per-rank graphs (``rank00002.json``), written by ``ranks=Ranks(dir=...)``.
FILE_PATTERN = "rank*.json"


def rank_file(rank: int) -> str:
    return f"rank{rank:05d}.json"


def fingerprint(g: GradGraph) -> str:
    """What makes two ranks' graphs the same structure: the ops in id order and the edges (not shapes: ranks may
    get batches of different sizes)."""
    h = hashlib.sha1()
    nodes = g.nx._node
    for i in sorted(nodes):
        h.update(f"{i}:{nodes[i].get('op')};".encode())
    for u, v in sorted(g.nx.edges()):
        h.update(f"{u}>{v};".encode())
    return h.hexdigest()


def _step(rec: Dict[str, Any]) -> Optional[float]:
    f, b = rec.get("fwd_ms"), rec.get("bwd_ms")
    if f is None and b is None:
        return None
    return (f or 0.0) + (b or 0.0)


#: Nodes whose time is not the rank's compute: gradient accumulation into ``.grad``, where the hooks of a
#: distributed job run (DDP copies the gradient into its bucket and launches the bucket's allreduce there, so the
#: time depends on the transport and the other ranks; on a busy machine, waking the communication thread alone can
#: cost that rank a time slice).
NOT_COMPUTE = ("AccumulateGrad",)


def _compute(g: GradGraph) -> Optional[float]:
    """The time a rank spent computing: its nodes' forward + backward ms summed, but for :data:`NOT_COMPUTE`
    (each node's own statistic over the repeats — with ``ranks=``, medians — so a spike in one run of one node
    stays out), else the timing's own totals; ``None`` when untimed."""
    timed = False
    times: List[float] = []
    for rec in g.nx._node.values():
        f, b = rec.get("fwd_ms"), rec.get("bwd_ms")
        timed = timed or f is not None or b is not None
        if rec.get("op") not in NOT_COMPUTE:
            times.extend(v for v in (f, b) if v is not None)
    if timed:
        return float(sum(times))
    t = g.meta.get("timing") or {}
    fo, bn = t.get("forward_ops_ms"), t.get("backward_nodes_ms")
    return None if fo is None and bn is None else (fo or 0.0) + (bn or 0.0)


def _backward_compute(g: GradGraph) -> Optional[float]:
    """The rank's backward nodes' ms summed, but for :data:`NOT_COMPUTE`; ``None`` when no node has a backward
    time."""
    times = [rec["bwd_ms"] for rec in g.nx._node.values()
             if rec.get("bwd_ms") is not None and rec.get("op") not in NOT_COMPUTE]
    return float(sum(times)) if times else None


class RankSet:
    """The graphs of the ranks of one job (``rank -> GradGraph``), compared (module docstring).

    >>> rs = gw.profile(step, batch, ranks="all")     # on rank 0        # doctest: +SKIP
    >>> rs.straggler        # {"rank": 3, "excess_ms": 210.3, "node": 7, ...} or None
    >>> rs.divergent        # [{"rank": 2, "added": [...], "first": {"source": "train.py:44", ...}}]
    >>> rs.unused           # {1: ["module.extra.weight", "module.extra.bias"]}
    >>> rs.node_stats(7)    # {"min", "median", "max", "straggler", "spread_ms", "times": {rank: ms}}
    >>> rs.nway([0, 2])     # the MultiDiff of those ranks' graphs (panes), with the per-rank record
    >>> rs.export_html("ranks.html"); rs.widget()

    ``world_size``: the job's (ranks not gathered are simply absent). ``gather``: how the graphs reached rank 0
    (``{"via", "seconds", "bytes"}``), when gathered.
    """

    def __init__(self, graphs: Dict[int, GradGraph], world_size: Optional[int] = None,
                 gather: Optional[Dict[str, Any]] = None) -> None:
        if not graphs:
            raise ValueError("RankSet: no graphs")
        self.graphs: Dict[int, GradGraph] = {int(r): graphs[r] for r in sorted(graphs)}
        self.ranks: List[int] = list(self.graphs)
        self.world_size = int(world_size) if world_size is not None else max(self.ranks) + 1
        self.gather = gather
        self._prints = {r: fingerprint(g) for r, g in self.graphs.items()}
        by: Dict[str, List[int]] = {}
        for r in self.ranks:
            by.setdefault(self._prints[r], []).append(r)
        self.groups: List[List[int]] = sorted(by.values(), key=lambda grp: (-len(grp), grp[0]))
        self.reference: int = self.groups[0][0]
        self._maps: Dict[int, Dict[int, int]] = {}
        self._diffs: Dict[Tuple[int, int], Any] = {}
        self._stats: Optional[Dict[str, Any]] = None

    # -- structure -------------------------------------------------------------------------------------------------
    def __getitem__(self, rank: int) -> GradGraph:
        return self.graphs[rank]

    def __len__(self) -> int:
        return len(self.ranks)

    def same_structure(self, rank: int) -> bool:
        return self._prints[rank] == self._prints[self.reference]

    def pair(self, a: int, b: int) -> Any:
        """The two-way :class:`~graphwidget.Diff` of two ranks' graphs."""
        from .diff.result import build
        for r in (a, b):
            if r not in self.graphs:
                raise KeyError(f"RankSet.pair: no graph of rank {r!r}; gathered: {self.ranks}.")
        if (a, b) not in self._diffs:
            self._diffs[(a, b)] = build(self.graphs[a], self.graphs[b], (f"rank {a}", f"rank {b}"))
        return self._diffs[(a, b)]

    def mapping(self, rank: int) -> Dict[int, int]:
        """Reference node id -> the id of the same node in ``rank``'s graph (identity for the same structure)."""
        if rank not in self._maps:
            if self.same_structure(rank):
                self._maps[rank] = {i: i for i in self.graphs[rank].nx}
            else:
                self._maps[rank] = dict(self.pair(self.reference, rank).matched)
        return self._maps[rank]

    @property
    def divergent(self) -> List[Dict[str, Any]]:
        """One entry per rank whose graph differs from the reference's: ``{"rank", "added"`` (its ids),
        ``"removed"`` (reference ids), ``"changed"``, ``"lines"`` (the sources of those nodes, in creation order),
        ``"first"``: ``{"node", "op", "source", "code", "in"}`` — the first such node the forward created (``in``:
        ``"rank"`` for a node only that rank has, ``"reference"`` for one it lacks)}``."""
        out = []
        for r in self.ranks:
            if self.same_structure(r):
                continue
            d = self.pair(self.reference, r)
            na, nb = self.graphs[self.reference].nx._node, self.graphs[r].nx._node
            cand = [(nb[i], i, "rank") for i in d.added] + [(na[i], i, "reference") for i in d.removed]
            cand.sort(key=lambda c: (c[0].get("seq") is None, c[0].get("seq") or 0, c[2], c[1]))
            lines: List[str] = []
            for rec, _, _ in cand:
                src = rec.get("source")
                if src and src not in lines:
                    lines.append(src)
            first = next((c for c in cand if c[0].get("source")), cand[0] if cand else None)
            out.append({
                "rank": r, "added": sorted(d.added), "removed": sorted(d.removed),
                "changed": [[x, y, f] for x, y, f in d.changed], "lines": lines,
                "first": None if first is None else {"node": first[1], "op": first[0].get("op"),
                                                     "source": first[0].get("source"),
                                                     "code": first[0].get("code"), "in": first[2]},
                "same_as": [x for x in self.ranks if x != r and self._prints[x] == self._prints[r]],
            })
        return out

    @property
    def unused(self) -> Dict[int, List[str]]:
        """Rank -> the parameters no node of its graph reads (ranks with none are left out; a rank that did not
        record it — not gathered by ``ranks=`` — too)."""
        out = {}
        for r, g in self.graphs.items():
            names = (g.meta.get("rank") or {}).get("unused")
            if isinstance(names, list) and names:
                out[r] = [str(x) for x in names]
        return out

    # -- time --------------------------------------------------------------------------------------------------------
    def _node_stats(self) -> Dict[str, Any]:
        if self._stats is not None:
            return self._stats
        ref = self.graphs[self.reference]
        ids = sorted(ref.nx)
        cols: Dict[str, Dict[str, List[Optional[float]]]] = {"fwd_ms": {}, "bwd_ms": {}, "step_ms": {}}
        for r in self.ranks:
            nodes, m = self.graphs[r].nx._node, self.mapping(r)
            for key in cols:
                col: List[Optional[float]] = []
                for i in ids:
                    j = m.get(i)
                    rec = nodes[j] if j is not None else None
                    col.append(None if rec is None else (_step(rec) if key == "step_ms" else rec.get(key)))
                cols[key][str(r)] = col
        timed = any(v is not None for c in cols["step_ms"].values() for v in c)
        stats: Dict[str, List[Any]] = {"min": [], "median": [], "max": [], "straggler": [], "spread_ms": [],
                                       "spread": [], "ranks": []}
        for k in range(len(ids)):
            vals = [(cols["step_ms"][str(r)][k], r) for r in self.ranks]
            have = [(v, r) for v, r in vals if v is not None]
            if not have:
                for key in stats:
                    stats[key].append(None if key != "ranks" else 0)
                continue
            lo, hi = min(v for v, _ in have), max(v for v, _ in have)
            med = median([v for v, _ in have])
            slow = min(r for v, r in have if v == hi)
            stats["min"].append(lo)
            stats["median"].append(med)
            stats["max"].append(hi)
            stats["straggler"].append(slow if len(have) > 1 else None)
            stats["spread_ms"].append(hi - lo)
            stats["spread"].append((hi - lo) / med if med else None)
            stats["ranks"].append(len(have))
        self._stats = {"ids": ids, **({k: v for k, v in cols.items()} if timed else {}),
                       "stats": stats if timed else None}
        if timed:
            self._write_spread(ids, stats["spread_ms"])
        return self._stats

    def _write_spread(self, ids: List[int], spread: List[Optional[float]]) -> None:
        """Each rank's graph gets, on every node, the time spread over the ranks of its reference node
        (``rank_spread_ms``: the by-rank colouring every view reads, docs/nway.md); a node the reference lacks gets
        none. A graph without ``meta.rank`` is given one, so its JSON carries the key."""
        by_ref = dict(zip(ids, spread))
        for r in self.ranks:
            g = self.graphs[r]
            if not isinstance(g.meta.get("rank"), dict):
                g.meta["rank"] = {"rank": r, "world_size": self.world_size}
            back = {j: i for i, j in self.mapping(r).items()}
            for j, rec in g.nx._node.items():
                i = back.get(j)
                rec["rank_spread_ms"] = None if i is None else by_ref.get(i)

    def node_stats(self, node: int) -> Dict[str, Any]:
        """Node ``node`` of the reference graph across ranks: ``{"min", "median", "max", "straggler", "spread_ms",
        "times": {rank: forward + backward ms}}`` (``None`` values when the graphs were not timed)."""
        s = self._node_stats()
        try:
            k = s["ids"].index(node)
        except ValueError:
            raise KeyError(f"RankSet.node_stats: the reference graph (rank {self.reference}) has no node "
                           f"{node!r}.") from None
        st = s.get("stats") or {}
        out = {key: (st[key][k] if st else None) for key in ("min", "median", "max", "straggler", "spread_ms")}
        out["times"] = {int(r): col[k] for r, col in (s.get("step_ms") or {}).items()}
        return out

    def per_rank(self) -> List[Dict[str, Any]]:
        """Per rank: forward and backward wall ms, ``compute_ms`` (inside nodes: the nodes' times summed, but for
        :data:`NOT_COMPUTE`), ``wait_ms`` (the rest), ``nodes``, ``same_structure``, ``unused`` and where it ran
        (``host``)."""
        out = []
        for r, g in self.graphs.items():
            t = g.meta.get("timing") or {}
            f, b = t.get("forward_ms"), t.get("backward_ms")
            compute = _compute(g)
            wall = None if f is None and b is None else (f or 0.0) + (b or 0.0)
            info = g.meta.get("rank") or {}
            bwd_nodes = _backward_compute(g)
            own = None if f is None else f + (bwd_nodes or 0.0)
            fi = t.get("forward_ms_interval")
            own_iv = ([fi[0] + (bwd_nodes or 0.0), fi[1] + (bwd_nodes or 0.0)]
                      if own is not None and isinstance(fi, list) and len(fi) == 2 else None)
            out.append({"rank": r, "forward_ms": f, "backward_ms": b, "compute_ms": compute,
                        "wait_ms": None if compute is None or wall is None else max(0.0, wall - compute),
                        "own_ms": own, "own_interval": own_iv,
                        "nodes": len(g), "same_structure": self.same_structure(r),
                        "unused": list(info.get("unused") or []),
                        "unused_scanned": isinstance(info.get("unused"), list), "host": info.get("host")})
        return out

    @property
    def straggler(self) -> Optional[Dict[str, Any]]:
        """``{"rank", "measure", "rank_ms", "others_ms", "excess_ms", "compute_ms", "median_ms", "node", "op",
        "module", "source", "node_excess_ms"}`` for the rank that is clearly slower than the others, or ``None``.

        Judged on two measures, each against the median of the *other* ranks (never one that includes the rank
        judged): ``own`` — the rank's whole step as it spent it itself: the forward's wall time (Python included:
        a sleep in a module's ``forward`` counts) plus its backward nodes (not the engine's waits, where a DDP rank
        waits for the slowest); and ``compute`` — the time inside nodes. A rank stands out on a measure when it
        exceeds the others' median by :data:`STRAGGLER_SHARE` of it and of the others' whole step, and by
        :data:`STRAGGLER_FLOOR_MS` at least (below that, two identical ranks differ by noise), and, with three
        ranks or more, leads the next slowest by more than the spread of the others. ``excess_ms`` is the
        larger excess of the measures it stands out on; ``node`` (with its op, module and line) is the reference
        node where it loses the most against the median of the others."""
        per = [p for p in self.per_rank() if p["compute_ms"] is not None]
        if len(per) < 2:
            return None
        best: Optional[Dict[str, Any]] = None
        for measure in ("own_ms", "compute_ms"):
            have = [p for p in per if p.get(measure) is not None]
            if len(have) < 2:
                continue
            worst = max(have, key=lambda p: (p[measure], -p["rank"]))
            rest = [p[measure] for p in have if p is not worst]
            others = median(rest) or 0.0
            step = median([(p["forward_ms"] or 0.0) + (p["backward_ms"] or 0.0) for p in have if p is not worst])
            excess = worst[measure] - others
            if excess < max(STRAGGLER_SHARE * others, STRAGGLER_SHARE * (step or 0.0), STRAGGLER_FLOOR_MS):
                continue
            if len(rest) >= 2 and worst[measure] - max(rest) <= max(rest) - min(rest):
                continue
            ivs = [p.get("own_interval") for p in have]
            if measure == "own_ms" and all(ivs) and worst["own_interval"][0] <= max(
                    p["own_interval"][1] for p in have if p is not worst):
                continue  # its runs overlap another rank's: the forward's run-to-run noise, not a slower rank
            if best is None or excess > best["excess_ms"]:
                best = {"rank": worst["rank"], "measure": "own" if measure == "own_ms" else "compute",
                        "rank_ms": worst[measure], "others_ms": others, "excess_ms": excess,
                        "compute_ms": worst["compute_ms"], "median_ms": others}
        if best is None:
            return None
        r = best["rank"]
        s = self._node_stats()
        node, node_excess = None, None
        if s.get("step_ms"):
            mine = s["step_ms"][str(r)]
            ops = self.graphs[self.reference].nx._node
            for k, i in enumerate(s["ids"]):
                if mine[k] is None or ops[i].get("op") in NOT_COMPUTE:
                    continue
                m = median([s["step_ms"][str(x)][k] for x in self.ranks if x != r])
                if m is None:
                    continue
                if node_excess is None or mine[k] - m > node_excess:
                    node, node_excess = i, mine[k] - m
        d = self.graphs[self.reference].nx._node.get(node, {}) if node is not None else {}
        best.update(node=node, node_excess_ms=node_excess, op=d.get("op"), module=d.get("module"),
                    source=d.get("source"))
        return best

    # -- the N-way view and the document ----------------------------------------------------------------------------
    def default_shown(self, limit: int = 4) -> List[int]:
        """The ranks worth panes: the reference, the divergent ranks, the straggler; at least two when there are."""
        shown = [self.reference]
        for d in self.divergent:
            if d["rank"] not in shown:
                shown.append(d["rank"])
        s = self.straggler
        if s and s["rank"] not in shown:
            shown.append(s["rank"])
        for r in self.ranks:
            if len(shown) >= 2:
                break
            if r not in shown:
                shown.append(r)
        return shown[:max(limit, 2)]

    def record(self, shown: Sequence[int]) -> Dict[str, Any]:
        """The ``ranks`` part of the N-way document (docs/nway.md) for panes of ``shown`` (the reference first)."""
        s = self._node_stats()
        nodes: Dict[str, Any] = {"ids": s["ids"]}
        for key in ("fwd_ms", "bwd_ms", "step_ms"):
            if key in s:
                nodes[key] = s[key]
        nodes["stats"] = s.get("stats")
        return {"world_size": self.world_size, "ranks": list(self.ranks), "shown": list(shown),
                "reference_rank": self.reference, "groups": [list(g) for g in self.groups],
                "per_rank": self.per_rank(), "straggler": self.straggler, "divergent": self.divergent,
                "unused": {str(r): v for r, v in self.unused.items()}, "nodes": nodes,
                "colour": {"metric": "spread_ms", "of": "step_ms",
                           "what": "per reference node: max - min over ranks of forward + backward ms"},
                "gather": self.gather}

    def nway(self, ranks: Any = None) -> Any:
        """A :class:`~graphwidget.MultiDiff` of the graphs of ``ranks`` (default :meth:`default_shown`; ``"all"``:
        every rank), the reference rank first, carrying the per-rank record of every gathered rank."""
        from .diff.multi import build_multi
        if ranks is None:
            shown = self.default_shown()
        elif ranks == "all":
            shown = list(self.ranks)
        else:
            shown = [int(r) for r in ranks]
            bad = [r for r in shown if r not in self.graphs]
            if bad:
                raise KeyError(f"RankSet.nway: no graph of rank {bad[0]}; gathered: {self.ranks}.")
        shown = [self.reference] + [r for r in dict.fromkeys(shown) if r != self.reference]
        return build_multi([self.graphs[r] for r in shown], [f"rank {r}" for r in shown], kind="ranks",
                           ranks=self.record(shown))

    def sentence(self) -> str:
        return ranks_sentence(self.record([self.reference]))

    def report(self) -> str:
        return ranks_report(self.record([self.reference]))

    def __repr__(self) -> str:
        return f"<RankSet {self.sentence()}>"

    def to_json(self, indent: Optional[int] = None) -> str:
        """The ``"graphwidget-nway"`` document of every rank's graph (``nway("all")``), marked
        ``"result": "RankSet"`` so that :func:`graphwidget.load_json` gives a :class:`RankSet` back."""
        text = str(self.nway("all").to_json(indent=indent))
        return '{"result":"RankSet",' + text[1:]

    @classmethod
    def from_nway(cls, multi: Any) -> "RankSet":
        """The rank set an N-way document of kind ``"ranks"`` showing every rank holds (what :meth:`to_json`
        wrote): its graphs by rank, the job's world size and how they were gathered."""
        record = multi.ranks or {}
        shown = record.get("shown")
        if multi.kind != "ranks" or not isinstance(shown, list) or len(shown) != len(multi.sides):
            raise ValueError("graphwidget: this N-way document is not a rank set (kind \"ranks\" with every "
                             "pane's rank); load it as a MultiDiff.")
        graphs = {int(r): multi.graphs[side] for r, side in zip(shown, multi.sides)}
        return cls(graphs, world_size=record.get("world_size"), gather=record.get("gather"))

    def export_html(self, path: Any, ranks: Any = None, **kwargs: Any) -> Any:
        """The N-way export of :meth:`nway` (``ranks``: which panes)."""
        return self.nway(ranks).export_html(path, **kwargs)

    def widget(self, ranks: Any = None, **kwargs: Any) -> Any:
        """The N-way widget of :meth:`nway` (``ranks``: which panes; keywords: ``NWayWidget``'s)."""
        return self.nway(ranks).widget(**kwargs)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> Any:
        return self.nway()._repr_mimebundle_(include=include, exclude=exclude)

    def save(self, folder: Any) -> List[Path]:
        """Write each rank's graph as ``folder/rank00002.json`` (what ``python -m graphwidget ranks`` reads)."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        paths = []
        for r, g in self.graphs.items():
            p = out / rank_file(r)
            p.write_text(g.to_json(), encoding="utf-8")
            paths.append(p)
        return paths

    @classmethod
    def from_dir(cls, folder: Any) -> "RankSet":
        """Read the graphs the ranks wrote into ``folder`` (``rank*.json``; each one's rank from its
        ``meta.rank``, else from the file name)."""
        from ..model.io import graph_from_json
        folder = Path(folder)
        if not folder.is_dir():
            raise FileNotFoundError(f"graphwidget: {folder} is not a folder of per-rank graphs (rank00000.json, ...).")
        graphs: Dict[int, GradGraph] = {}
        world = None
        for p in sorted(folder.glob(FILE_PATTERN)):
            g = graph_from_json(p.read_bytes())
            info = g.meta.get("rank") or {}
            r = info.get("rank")
            if not isinstance(r, int):
                digits = "".join(ch for ch in p.stem if ch.isdigit())
                if not digits:
                    continue
                r = int(digits)
            if r in graphs:
                raise ValueError(f"graphwidget: two files in {folder} hold rank {r}'s graph.")
            graphs[r] = g
            if isinstance(info.get("world_size"), int):
                world = max(world or 0, info["world_size"])
        if not graphs:
            raise FileNotFoundError(f"graphwidget: no per-rank graphs ({FILE_PATTERN}) in {folder}.")
        return cls(graphs, world_size=world)


def load_ranks(folder: Any) -> RankSet:
    """Deprecated: ``gw.load(folder)`` reads a folder of per-rank graphs (:meth:`RankSet.from_dir`)."""
    import warnings
    warnings.warn("graphwidget.load_ranks(folder) is deprecated: use graphwidget.load(folder), which reads the folder "
                  "RankSet.save wrote.", DeprecationWarning, stacklevel=2)
    return RankSet.from_dir(folder)

