"""Which modules are worth checkpointing (torch-free): for each module (and each run of indexed sibling modules), the
peak the backward would have if its saved activations were recomputed instead of kept, simulated on the memory
accounting of :mod:`graphwidget.analysis.memory_accounting`, and the forward time that recomputing costs (the median
over runs of the module's summed node times, with an order-statistic interval). Ranked by bytes saved per
millisecond recomputed; identical blocks tie and sort by label; the largest saving is always listed. See
docs/memory.md.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from .memory_accounting import _INF, Accounting, Storage, has_memory

_INDEXED = re.compile(r"^(.*)\.(\d+)$")

#: A candidate must lower the peak by at least this share of it to be listed: ranked by bytes per ms recomputed, a
#: layer norm that saves a few KiB in no time would otherwise come first, and no one checkpoints for that.
MIN_LISTED_SHARE = 0.01


def _module_paths(nodes: Dict[int, Dict[str, Any]]) -> List[str]:
    paths: Set[str] = set()
    for d in nodes.values():
        m = d.get("module")
        if not m:
            continue
        parts = m.split(".")
        for i in range(1, len(parts) + 1):
            paths.add(".".join(parts[:i]))
    return sorted(paths)


def _runs(paths: Sequence[str], classes: Dict[str, str]) -> List[Tuple[str, List[str]]]:
    """Runs of repeated blocks: siblings ``P.i .. P.j`` (consecutive indices, same class), every range of at least
    two; labelled ``P.i–j``."""
    groups: Dict[str, List[int]] = {}
    for p in paths:
        m = _INDEXED.match(p)
        if m:
            groups.setdefault(m.group(1), []).append(int(m.group(2)))
    out: List[Tuple[str, List[str]]] = []
    for prefix, idx in groups.items():
        idx.sort()
        cls = {classes.get(f"{prefix}.{i}") for i in idx}
        if len(idx) < 2 or len(cls) > 1:
            continue
        for a in range(len(idx)):
            for b in range(a + 1, len(idx)):
                if idx[b] - idx[a] != b - a:
                    break
                out.append((f"{prefix}.{idx[a]}–{idx[b]}", [f"{prefix}.{i}" for i in idx[a:b + 1]]))
    return out


def _prefixes(path: str) -> List[str]:
    """``"a.b.c"`` -> ``["", "a", "a.b", "a.b.c"]``: every module path that contains it (``""``: the whole model)."""
    parts = path.split(".") if path else []
    return [""] + [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


class _RangeMax:
    """Maximum of ``values[i..j]`` in constant time after an ``n log n`` build (a sparse table): a candidate changes
    the timeline by steps at a few points, so its new peak is the largest of (the step's level + the old maximum
    between two steps), not a walk over every point for every candidate."""

    def __init__(self, values: Sequence[float]) -> None:
        self.table = [list(values)]
        k = 1
        while 2 * k <= len(values):
            prev = self.table[-1]
            self.table.append([max(prev[i], prev[i + k]) for i in range(len(values) - 2 * k + 1)])
            k *= 2

    def __call__(self, i: int, j: int) -> float:
        """max(values[i:j]) for i < j."""
        level = (j - i).bit_length() - 1
        row = self.table[level]
        return max(row[i], row[j - (1 << level)])


class _Simulator:
    """Predicts the peak with some modules checkpointed (torch.utils.checkpoint, non-reentrant, each module its own
    checkpoint): the activations saved only inside a module, other than its inputs, are not kept through the
    forward; they come back when the backward reaches the module (the recompute) and go when they did before.

    Per module path, what a candidate needs is gathered once (the storages it could drop, its first point in
    backward, its forward time), so that each of the many candidates (every module, every run of blocks) costs
    the size of its own modules, not of the graph."""

    def __init__(self, graph: Any, acc: Accounting) -> None:
        mem = graph.meta["memory"]
        self.acc = acc
        amax = mem.get("allocated_max")
        if amax and len(amax) == acc.n and all(v is not None for v in amax):
            self.base = [float(v) for v in amax]
            self.source = "allocator"
        else:
            self.base = [float(a + b) for a, b in zip(acc.saved, acc.gradients)]
            self.source = "graph"
        self.peak = max(self.base) if self.base else 0.0
        self.peak_point = max(range(acc.n), key=lambda i: (self.base[i], -i)) if acc.n else 0
        self.range_max = _RangeMax(self.base)
        inputs = mem.get("module_inputs") or {}
        self.inputs = {k: set(v) for k, v in inputs.items()}
        nodes = acc.nodes
        module_of = {v: d.get("module") for v, d in nodes.items()}
        # Each activation storage's innermost module that contains all its savers: only it (and its ancestors)
        # can drop it. Filed under every path that contains that module.
        self.within: Dict[str, List[Storage]] = {}
        for st in acc.storages.values():
            if st.parameter or st.end == _INF:
                continue
            mods = [module_of.get(v) for v in st.savers]
            if any(m is None for m in mods):
                continue
            common = mods[0].split(".") if mods[0] else []  # type: ignore[union-attr]
            for m in mods[1:]:
                parts = m.split(".") if m else []  # type: ignore[union-attr]
                k = 0
                while k < min(len(common), len(parts)) and common[k] == parts[k]:
                    k += 1
                common = common[:k]
            for prefix in _prefixes(".".join(common)):
                self.within.setdefault(prefix, []).append(st)
        # The first backward point of each path's nodes (where its recompute runs), and its nodes' forward time.
        self.first: Dict[str, int] = {}
        for v, p in acc.bpos.items():
            m = module_of.get(v)
            if m is not None:
                for prefix in _prefixes(m):
                    if p < self.first.get(prefix, acc.n):
                        self.first[prefix] = p
        self.timed = any(d.get("fwd_ms") is not None for d in nodes.values())
        # per path [median, lo, hi] over runs of the run's summed node times (gw.profile); else the nodes' own
        self.module_ms: Dict[str, List[float]] = dict((graph.meta.get("timing") or {}).get("module_fwd_ms") or {})
        # what a module is, for telling identical blocks apart from different ones: its nodes' ops and shapes
        sig: Dict[str, List[Any]] = {}
        for v in sorted(nodes, key=lambda v: nodes[v].get("seq") or 0):
            m = module_of.get(v)
            if m is None:
                continue
            d = nodes[v]
            item = (d.get("op"), tuple(tuple(o.get("shape") or ()) for o in (d.get("outputs") or ()) if o))
            for prefix in _prefixes(m):
                sig.setdefault(prefix, []).append(item)
        self.signature = {k: hash(tuple(v)) for k, v in sig.items()}
        self.fwd_ms: Dict[str, float] = {}
        for v, d in nodes.items():
            m, ms = module_of.get(v), d.get("fwd_ms")
            if m is not None and ms:
                for prefix in _prefixes(m):
                    self.fwd_ms[prefix] = self.fwd_ms.get(prefix, 0.0) + ms

    def simulate(self, paths: Sequence[str]) -> Optional[Dict[str, Any]]:
        """``paths``: modules checkpointed together, none inside another (one module, or sibling blocks)."""
        n = self.acc.n
        steps: Dict[int, float] = {}
        frees = 0
        p0 = self.peak_point
        for path in paths:
            r = self.first.get(path)
            if r is None:
                return None
            ins = self.inputs.get(path, ())
            for st in self.within.get(path, ()):
                a = max(int(st.start), 0)
                if st.sid in ins or a >= r:
                    continue  # kept as the module's input, or saved after the recompute would start
                steps[a] = steps.get(a, 0.0) - st.bytes
                steps[r] = steps.get(r, 0.0) + st.bytes
                if a <= p0 < r:
                    frees += st.bytes
        new_peak, level, start = float("-inf"), 0.0, 0
        for pos in sorted(steps) + [n]:
            if pos > start:
                new_peak = max(new_peak, level + self.range_max(start, pos))
            if pos < n:
                level += steps[pos]
            start = pos
        if new_peak == float("-inf"):
            new_peak = 0.0
        ms: Optional[float] = None
        interval: Optional[List[float]] = None
        if self.module_ms and all(q in self.module_ms for q in paths):
            ms = sum(self.module_ms[q][0] for q in paths)
            interval = [sum(self.module_ms[q][1] for q in paths), sum(self.module_ms[q][2] for q in paths)]
        elif self.timed:
            ms = sum(self.fwd_ms.get(q, 0.0) for q in paths)
        return {"frees_bytes": int(frees), "new_peak_bytes": int(new_peak),
                "saving_bytes": int(self.peak - new_peak), "recompute_ms": ms, "recompute_interval": interval}


def checkpoint_candidates(graph: Any, acc: Optional[Accounting] = None, top: int = 10) -> List[Dict[str, Any]]:
    """Modules (and runs of repeated blocks, each block its own checkpoint) ranked by the peak bytes that
    ``torch.utils.checkpoint`` would save per ms of forward it recomputes (by bytes when the graph was not timed).

    Each row: ``label``, ``modules`` (paths to checkpoint), ``class``, ``frees_bytes`` (activations alive at the
    peak that would not be kept), ``saving_bytes`` (the predicted drop of the peak, with the recompute's own
    activations put back where the backward reaches the module), ``new_peak_bytes``, ``peak_bytes``,
    ``recompute_ms`` (the modules' measured forward time, or None; identical blocks share their median),
    ``recompute_interval`` (``[lo, hi]`` of that median over the profile's runs, or None), ``bytes_per_ms``,
    ``source`` (which peak:
    allocator or graph). Only rows that lower the peak by at least :data:`MIN_LISTED_SHARE` of it are kept. Needs
    ``module`` on the nodes (gw.trace / gw.profile) and a memory record."""
    if not has_memory(graph):
        return []
    acc = acc or Accounting(graph)
    if acc.n == 0:
        return []
    sim = _Simulator(graph, acc)
    classes = graph.meta.get("modules") or {}
    paths = _module_paths(acc.nodes)
    cands: List[Tuple[str, List[str]]] = [(p, [p]) for p in paths] + _runs(paths, classes)
    rows = []
    for label, mods in cands:
        r = sim.simulate(mods)
        if r is None or r["saving_bytes"] <= 0 or r["saving_bytes"] < MIN_LISTED_SHARE * sim.peak:
            continue
        ms = r["recompute_ms"]
        rows.append({"label": label, "modules": mods, "class": classes.get(mods[0]), **r,
                     "peak_bytes": int(sim.peak), "bytes_per_ms": (r["saving_bytes"] / ms) if ms else None,
                     "source": sim.source})
    _tie_equal_blocks(rows, sim)
    rows.sort(key=lambda r: (-(r["bytes_per_ms"] if r["bytes_per_ms"] is not None else r["saving_bytes"]),
                             -r["saving_bytes"], _natural(r["label"])))
    if not top or len(rows) <= top:
        return rows
    out = rows[:top]
    best = max(rows, key=lambda r: (r["saving_bytes"], -len(r["modules"])))
    if best not in out:  # the largest saving on offer is always listed, whatever it costs
        out[-1] = best
    return out


def _natural(label: str) -> List[Any]:
    """``layers.2–3`` before ``layers.10–11``: numbers compare as numbers."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", label)]


def _mid(xs: List[float]) -> float:
    v = sorted(xs)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def _tie_equal_blocks(rows: List[Dict[str, Any]], sim: _Simulator) -> None:
    """Candidates made of identical blocks (same class, same number of modules, same ops and shapes, same saving)
    get one recompute time, the median of theirs: which of them comes first must not depend on timing noise, so they
    tie and sort by label."""
    groups: Dict[Tuple[Any, ...], List[Dict[str, Any]]] = {}
    for r in rows:
        if r["recompute_ms"] is None:
            continue
        key = (r["class"], r["saving_bytes"], tuple(sim.signature.get(m) for m in r["modules"]))
        groups.setdefault(key, []).append(r)
    for members in groups.values():
        if len(members) < 2:
            continue
        mid = _mid([r["recompute_ms"] for r in members])
        ivs = [r["recompute_interval"] for r in members if r.get("recompute_interval")]
        iv = [_mid([i[0] for i in ivs]), _mid([i[1] for i in ivs])] if len(ivs) == len(members) else None
        for r in members:
            r["recompute_ms_own"] = r["recompute_ms"]
            r["recompute_ms"] = mid
            r["recompute_interval"] = iv
            r["bytes_per_ms"] = r["saving_bytes"] / mid if mid else None
