"""Validation of the documents that compare graphs: ``"graphwidget-diff"`` (docs/diff.md) and ``"graphwidget-nway"``
(docs/nway.md, including a rank set's ``ranks`` record). Their graphs are checked by
:func:`graphwidget.model.schema.validate` first; these checks add the matching (pairs of existing node ids), the
summary and verdicts, and the ranks, with the same kind of message: what is wrong, where, and what to write instead.

Torch-free, like :mod:`graphwidget.model.schema`, whose names (formats, versions, the value checks) it uses.
"""
from __future__ import annotations

import operator
from typing import Any, Callable, Dict, List, Optional, Tuple

from .schema import NWAY_KINDS, SchemaError, _is_int, _is_num, _nonneg_int, _nonneg_num, _plain, _plain_text, _show

#: Keys of a diff document's ``summary`` that hold per-side totals (``"a"``, ``"b"``) and their comparison.
DIFF_TOTALS = ("a", "b", "delta", "ratio")
#: Top-level keys of a diff document (docs/diff.md), besides ``format`` and ``version``.
DIFF_KEYS = ("labels", "a", "b", "matched", "changed", "removed", "added", "summary", "changes", "findings")


def validate_diff(doc: Dict[str, Any], ids_a: set, ids_b: set) -> None:
    """Check a ``"graphwidget-diff"`` document's own fields (docs/diff.md; its graphs ``a`` and ``b`` are checked
    by :func:`validate`, ``ids_a`` / ``ids_b`` are their node ids): ``matched`` pairs of ids that exist, no node
    matched twice; ``removed`` / ``added`` ids that exist, every node matched once or removed (A) / added (B);
    ``changed`` entries ``[a_id, b_id, [field, ...]]`` among the matched pairs, each pair once; ``summary`` an object
    of totals (numbers or null) and counts, its ``timing`` and ``equivalence`` objects of plain JSON (finite numbers,
    strings, true/false, null, lists, objects; nested at most :data:`MAX_DEPTH` levels: their keys are not fixed
    here); ``changes`` and ``findings`` (recomputed on load) plain JSON. Raises :class:`SchemaError` saying what is
    wrong and what to write; builds no string while nothing is."""
    matched = doc.get("matched")
    if not isinstance(matched, list):
        raise SchemaError(f"\"matched\" must be a list of [a_id, b_id] pairs (docs/diff.md); got {_show(matched)}.")
    pair_of, in_b = _pairs_in_bulk(matched, ids_a, ids_b)
    if pair_of is None or in_b is None:  # something is wrong: find the first pair at fault and say what
        pair_of, in_b = _pairs_one_by_one(matched, ids_a, ids_b)
    for key, side, ids, paired, other in (("removed", "A", ids_a, pair_of, "matched once or removed"),
                                          ("added", "B", ids_b, in_b, "matched once or added")):
        _check_unmatched(doc.get(key), key, side, ids, paired, other)
    changed = doc.get("changed")
    if changed is not None:
        _check_changed(changed, matched, pair_of)
    _check_diff_summary(doc.get("summary"))
    _check_divergences(doc.get("summary"), ids_a, ids_b)
    for key in ("changes", "findings"):
        v = doc.get(key)
        if v is not None and (not isinstance(v, dict) or not _plain(v, 1)):
            raise SchemaError(f"\"{key}\" (recomputed on load) must be an object or null; got {_show(v)}."
                              if not isinstance(v, dict) else _plain_text(v, key, 1))
    for key, v in doc.items():
        if key not in DIFF_KEYS and key not in ("format", "version") and not _plain(v, 1):
            raise SchemaError(_plain_text(v, str(key), 1))


def _check_unmatched(listed: Any, key: str, side: str, ids: set, paired: Dict[int, int], other: str) -> None:
    """``removed`` (A) or ``added`` (B): node ids of that side, none matched or listed twice, and with the matched
    ones every node of the side."""
    if not isinstance(listed, list):
        raise SchemaError(f"\"{key}\" must be a list of node ids of {side}; got {_show(listed)}.")
    seen: set = set()
    for j, x in enumerate(listed):
        if not _nonneg_int(x) or x not in ids:
            raise SchemaError(f"{key}[{j}] names node {_show(x)} of {side}, which is not in that graph; every "
                              f"node of {side} is {other}.")
        if x in paired or x in seen:
            where = f"matched[{paired[x]}]" if x in paired else f"\"{key}\" twice"
            raise SchemaError(f"node {x} of {side} is in {key}[{j}] and {where}; every node of {side} is {other}.")
        seen.add(x)
    if len(paired) + len(seen) != len(ids):
        left = sorted(i for i in ids if i not in paired and i not in seen)
        raise SchemaError(f"nodes {left[:5]}{'...' if len(left) > 5 else ''} of {side} are neither matched nor "
                          f"{key}; every node of {side} is {other}.")


def _check_changed(changed: Any, matched: List[Any], pair_of: Dict[int, int]) -> None:
    """``changed``: ``[a_id, b_id, [field, ...]]`` entries among the matched pairs, each pair once."""
    if not isinstance(changed, list):
        raise SchemaError(f"\"changed\" must be a list of [a_id, b_id, [field, ...]] entries; got "
                          f"{_show(changed)}.")
    once: set = set()
    for j, c in enumerate(changed):
        if (not isinstance(c, list) or len(c) != 3 or not _nonneg_int(c[0]) or not _nonneg_int(c[1])
                or not isinstance(c[2], list) or not all(isinstance(f, str) and f for f in c[2])):
            raise SchemaError(f"\"changed\" entries are [a_id, b_id, [field, ...]] (node ids, then the names "
                              f"of the fields that differ); changed[{j}] is {_show(c)}.")
        at = pair_of.get(c[0])
        if at is None or matched[at][1] != c[1]:
            raise SchemaError(f"\"changed\" names the pair {c[:2]}, which is not in \"matched\" "
                              f"(changed[{j}]); list only matched pairs.")
        if c[0] in once:
            raise SchemaError(f"changed[{j}]: the pair {c[:2]} is listed twice; list each pair once with all "
                              f"its fields.")
        once.add(c[0])


def _pairs_in_bulk(matched: List[Any], ids_a: set, ids_b: set
                   ) -> Tuple[Optional[Dict[int, int]], Optional[Dict[int, int]]]:
    """``(A id -> index into matched, B id -> index)`` when every pair is two plain integer ids of their graphs and no
    node is matched twice, checked column by column; ``(None, None)`` when anything is wrong (the caller then looks
    pair by pair for the first fault, to name it)."""
    if not matched:
        return {}, {}
    if set(map(type, matched)) != {list} or set(map(len, matched)) != {2}:
        return None, None
    xs, ys = list(map(operator.itemgetter(0), matched)), list(map(operator.itemgetter(1), matched))
    # ids of a graph are integers, so membership settles bounds; the type pass refuses true/false (equal to 1/0)
    if not (set(map(type, xs)) <= {int} and set(map(type, ys)) <= {int}
            and ids_a.issuperset(xs) and ids_b.issuperset(ys)):
        return None, None
    pair_of, in_b = dict(zip(xs, range(len(xs)))), dict(zip(ys, range(len(ys))))
    if len(pair_of) != len(xs) or len(in_b) != len(ys):
        return None, None
    return pair_of, in_b


def _pairs_one_by_one(matched: List[Any], ids_a: set, ids_b: set) -> Tuple[Dict[int, int], Dict[int, int]]:
    """:func:`_pairs_in_bulk`, pair by pair, raising at the first pair at fault."""
    pair_of: Dict[int, int] = {}  # A id -> index into matched
    in_b: Dict[int, int] = {}  # B id -> index into matched
    for j, p in enumerate(matched):
        if not isinstance(p, list) or len(p) != 2 or not _nonneg_int(p[0]) or not _nonneg_int(p[1]):
            raise SchemaError(f"matched[{j}] must be a pair [a_id, b_id] of node ids; got {_show(p)}.")
        x, y = p
        if x not in ids_a or y not in ids_b:
            side, bad = ("A", x) if x not in ids_a else ("B", y)
            raise SchemaError(f"matched[{j}] names node {bad} of {side}, which is not in that graph "
                              f"(\"{side.lower()}\"); pair only nodes both graphs have.")
        if x in pair_of or y in in_b:
            side, bad, k = ("A", x, pair_of[x]) if x in pair_of else ("B", y, in_b[y])
            raise SchemaError(f"node {bad} of {side} is matched twice (matched[{k}] and matched[{j}]); a node is "
                              f"matched to at most one node of the other graph.")
        pair_of[x] = j
        in_b[y] = j
    return pair_of, in_b


def _values_object(v: Any, at: str, what: str, ok: Callable[[Any], bool], expected: str) -> None:
    """``v`` (at ``at``) is an object of ``what`` whose values are null or accepted by ``ok`` (``expected`` says
    what they must be); else :class:`SchemaError` naming the key."""
    if not isinstance(v, dict):
        raise SchemaError(f"{at} must be an object of {what} or null; got {_show(v)}.")
    bad = next((k for k, x in v.items() if x is not None and not ok(x)), None)
    if bad is not None:
        raise SchemaError(f"{at}.{bad} must be {expected} or null; got {_show(v[bad])}.")


def _check_divergences(summary: Any, ids_a: set, ids_b: set) -> None:
    """``summary.divergence`` (an object or null) and ``summary.divergences`` (a list of such objects): each names
    nodes ``a`` and ``b`` of the two graphs."""
    if not isinstance(summary, dict):
        return
    first = summary.get("divergence")
    rows = summary.get("divergences")
    if first is not None and not isinstance(first, dict):
        raise SchemaError(f"summary.divergence must be an object or null; got {_show(first)}.")
    if rows is not None and not isinstance(rows, list):
        raise SchemaError(f"summary.divergences must be a list of objects; got {_show(rows)}.")
    for at, r in [("summary.divergence", first)] + [(f"summary.divergences[{j}]", r) for j, r in
                                                     enumerate(rows or [])]:
        if r is None and at == "summary.divergence":
            continue
        if not isinstance(r, dict) or r.get("a") not in ids_a or r.get("b") not in ids_b \
                or not _nonneg_int(r.get("a")) or not _nonneg_int(r.get("b")):
            raise SchemaError(f"{at} must be an object whose \"a\" and \"b\" are node ids of graphs A and B; got "
                              f"{_show(r)}.")


def _check_diff_summary(summary: Any) -> None:
    if summary is None:
        return
    if not isinstance(summary, dict):
        raise SchemaError(f"\"summary\" must be an object (docs/diff.md) or null; got {_show(summary)}.")
    for key, v in summary.items():
        if v is None:
            continue
        at = f"summary.{key}"
        if key in DIFF_TOTALS:
            _values_object(v, at, "totals (nodes, edges, saved_bytes, ...)", _is_num, "a finite number")
        elif key == "counts":
            _values_object(v, at, "counts (matched, changed, added, removed)", _nonneg_int, "a non-negative integer")
        elif key in ("divergence", "divergences", "unpaired"):
            # gw.compare's divergence search (docs/diff.md): plain JSON; a record's node ids are checked against
            # the graphs by _check_divergences
            if not isinstance(v, (dict, list)):
                raise SchemaError(f"{at} must be an object, a list or null; got {_show(v)}.")
            if not _plain(v, 4):
                raise SchemaError(_plain_text(v, at, 4))
        elif key in ("timing", "equivalence"):
            # their contents are being redesigned: only plain JSON is required here, not a key set
            if not isinstance(v, dict):
                raise SchemaError(f"{at} must be an object or null; got {_show(v)}.")
            if not _plain(v, 2):
                raise SchemaError(_plain_text(v, at, 2))
        elif not _plain(v, 2):
            raise SchemaError(_plain_text(v, at, 2))


#: Top-level keys of an N-way document (docs/nway.md), besides ``format`` and ``version``.
NWAY_KEYS = ("kind", "labels", "graphs", "pairs", "verdicts", "table", "sentence", "ranks")


def validate_nway(doc: Dict[str, Any], ids: List[set]) -> None:
    """Check a ``"graphwidget-nway"`` document's own fields (docs/nway.md; its graphs are checked by
    :func:`validate`, ``ids[k]`` are the node ids of ``graphs[k]``, ``graphs[0]`` the reference): ``kind``; one
    ``pairs`` entry per other graph (``side`` 1..N-1, each once), each a diff of the reference and that graph
    (:func:`validate_diff`) whose ``regions`` name nodes both graphs have; ``verdicts`` entries ``{"a", "b"}`` of
    graph indices with plain-JSON verdicts; ``table`` plain JSON; the ``ranks`` part (:func:`_check_ranks`).
    Raises :class:`SchemaError` saying what is wrong and what to write."""
    n = len(ids)
    kind = doc.get("kind")
    if kind is not None and kind not in NWAY_KINDS:
        raise SchemaError(f"\"kind\" must be one of {', '.join(map(repr, NWAY_KINDS))}; got {_show(kind)}.")
    _check_pairs(doc.get("pairs"), ids)
    verdicts = doc.get("verdicts")
    if verdicts is not None:
        _check_verdicts(verdicts, n)
    sentence = doc.get("sentence")
    if sentence is not None and not isinstance(sentence, str):
        raise SchemaError(f"\"sentence\" must be a string or null; got {_show(sentence)}.")
    table = doc.get("table")
    if table is not None and (not isinstance(table, dict) or not _plain(table, 1)):
        raise SchemaError(f"\"table\" must be an object or null; got {_show(table)}." if not isinstance(table, dict)
                          else _plain_text(table, "table", 1))
    ranks = doc.get("ranks")
    if ranks is not None:
        _check_ranks(ranks, ids)
    elif kind == "ranks":
        raise SchemaError("a document of kind \"ranks\" needs its \"ranks\" object (docs/nway.md).")
    for key, v in doc.items():
        if key not in NWAY_KEYS and key not in ("format", "version") and not _plain(v, 1):
            raise SchemaError(_plain_text(v, str(key), 1))


def _check_pairs(pairs: Any, ids: List[set]) -> None:
    """``pairs``: one diff of the reference and each other graph (``side`` 1..N-1, each once), its regions too."""
    n = len(ids)
    if not isinstance(pairs, list):
        raise SchemaError(f"\"pairs\" must be a list, one entry per graph after the reference; got {_show(pairs)}.")
    seen: Dict[int, int] = {}
    for j, p in enumerate(pairs):
        side: Any = p.get("side") if isinstance(p, dict) else None
        if not isinstance(p, dict) or not _is_int(side) or not 1 <= side < n:
            raise SchemaError(f"pairs[{j}] must be an object whose \"side\" is the index of a graph after the "
                              f"reference (1..{n - 1}); got {_show(side if isinstance(p, dict) else p)}.")
        if side in seen:
            raise SchemaError(f"pairs[{seen[side]}] and pairs[{j}] both pair graph {side}; one entry per graph.")
        seen[side] = j
        try:
            validate_diff(p, ids[0], ids[side])
        except SchemaError as exc:
            raise SchemaError(f"pairs[{j}] (reference vs graph {side}): {exc}") from None
        regions = p.get("regions")
        if regions is not None:
            _check_regions(regions, j, side, ids)
    missing = [k for k in range(1, n) if k not in seen]
    if missing:
        raise SchemaError(f"graph {missing[0]} has no entry in \"pairs\"; every graph after the reference is "
                          f"matched to it.")


def _check_regions(regions: Any, j: int, side: int, ids: List[set]) -> None:
    """``pairs[j].regions``: compiled regions, each a node of graph ``side`` covering nodes of the reference."""
    if not isinstance(regions, list):
        raise SchemaError(f"pairs[{j}].regions must be a list of region records or null; got {_show(regions)}.")
    for k, r in enumerate(regions):
        at = f"pairs[{j}].regions[{k}]"
        if not isinstance(r, dict) or r.get("node") not in ids[side] or not _nonneg_int(r.get("node")):
            raise SchemaError(f"{at} must be an object whose \"node\" is a node of graph {side}; got "
                              f"{_show(r.get('node') if isinstance(r, dict) else r)}.")
        cov = r.get("covers")
        if not isinstance(cov, list) or not all(_nonneg_int(x) and x in ids[0] for x in cov):
            raise SchemaError(f"{at}.covers must be a list of node ids of the reference (graphs[0]).")
        if not _plain(r, 3):
            raise SchemaError(_plain_text(r, at, 3))


def _check_verdicts(verdicts: Any, n: int) -> None:
    """``verdicts``: entries ``{"a", "b"}`` of two different graph indices, with plain-JSON verdicts."""
    if not isinstance(verdicts, list):
        raise SchemaError(f"\"verdicts\" must be a list or null; got {_show(verdicts)}.")
    for j, v in enumerate(verdicts):
        if not isinstance(v, dict) or not all(_is_int(v.get(x)) and 0 <= v[x] < n for x in ("a", "b")) \
                or v["a"] == v["b"]:
            raise SchemaError(f"verdicts[{j}] must be an object whose \"a\" and \"b\" are two different graph "
                              f"indices (0..{n - 1}).")
        for key in ("equivalence", "timing"):
            x = v.get(key)
            if x is not None and (not isinstance(x, dict) or not _plain(x, 2)):
                raise SchemaError(f"verdicts[{j}].{key} must be an object or null." if not isinstance(x, dict)
                                  else _plain_text(x, f"verdicts[{j}].{key}", 2))


def _rank_list(v: Any) -> bool:
    return isinstance(v, list) and all(_nonneg_int(r) for r in v) and len(set(v)) == len(v)


def _check_ranks(r: Any, ids: List[set]) -> None:
    """The ``ranks`` part of an N-way document: which rank each graph is, per-rank totals, and per reference node
    the times of every rank (arrays as long as ``nodes.ids``) with their statistics; see docs/nway.md."""
    if not isinstance(r, dict):
        raise SchemaError(f"\"ranks\" must be an object or null; got {_show(r)}.")
    if not _plain(r, 1):
        raise SchemaError(_plain_text(r, "ranks", 1))
    ranks, shown = _check_rank_identity(r, ids)
    _check_rank_words(r, ranks, ids)
    nodes = r.get("nodes")
    if nodes is not None:
        _check_rank_nodes(nodes, ranks, ids)
    div = r.get("divergent")
    if div is not None:
        _check_divergent(div, ranks, shown, ids)


def _check_rank_identity(r: Dict[str, Any], ids: List[set]) -> Tuple[List[int], List[int]]:
    """``ranks``, ``shown`` (the rank of each graph), ``world_size`` and ``groups``; returns (ranks, shown)."""
    ranks: Any = r.get("ranks")
    if not _rank_list(ranks) or not ranks:
        raise SchemaError(f"ranks.ranks must be a non-empty list of distinct ranks (non-negative integers); got "
                          f"{_show(ranks)}.")
    shown: Any = r.get("shown")
    if not _rank_list(shown) or len(shown) != len(ids) or not set(shown) <= set(ranks):
        raise SchemaError(f"ranks.shown must list the rank of each graph ({len(ids)} distinct ranks among "
                          f"ranks.ranks); got {_show(shown)}.")
    world = r.get("world_size")
    if not _nonneg_int(world) or world < max(ranks) + 1:
        raise SchemaError(f"ranks.world_size must be an integer above every rank; got {_show(world)}.")
    groups = r.get("groups")
    if groups is not None:
        flat = [x for g in groups for x in g] if isinstance(groups, list) and all(_rank_list(g) for g in groups) \
            else None
        if flat is None or sorted(flat) != sorted(ranks):
            raise SchemaError("ranks.groups must split ranks.ranks into lists (ranks whose graphs have the same "
                              "structure), each rank once.")
    return ranks, shown


def _column(v: Any, at: str, n: int, ok: Callable[[Any], bool], what: str) -> None:
    """One per-node array of ``ranks.nodes``: ``n`` values, each null or passing ``ok``."""
    if not isinstance(v, list) or len(v) != n:
        raise SchemaError(f"{at} must be a list of {n} values (one per entry of ranks.nodes.ids); got "
                          f"{_show(v)}.")
    bad = next((k for k, x in enumerate(v) if x is not None and not ok(x)), None)
    if bad is not None:
        raise SchemaError(f"{at}[{bad}] must be {what} or null; got {_show(v[bad])}.")


def _check_rank_nodes(nodes: Any, ranks: List[int], ids: List[set]) -> None:
    """``ranks.nodes``: reference node ids, per rank their times, and per node the statistics over the ranks."""
    if not isinstance(nodes, dict):
        raise SchemaError(f"ranks.nodes must be an object or null; got {_show(nodes)}.")
    nid = nodes.get("ids")
    if not isinstance(nid, list) or not all(_nonneg_int(x) and x in ids[0] for x in nid):
        raise SchemaError("ranks.nodes.ids must be a list of node ids of the reference (graphs[0]).")
    n = len(nid)
    rank_keys = {str(x) for x in ranks}
    for metric in ("fwd_ms", "bwd_ms", "step_ms"):
        per = nodes.get(metric)
        if per is None:
            continue
        if not isinstance(per, dict) or not set(per) <= rank_keys:
            raise SchemaError(f"ranks.nodes.{metric} must be an object keyed by rank (\"0\", \"1\", ...) among "
                              f"ranks.ranks.")
        for key, v in per.items():
            _column(v, f"ranks.nodes.{metric}[{key!r}]", n, _nonneg_num, "a finite non-negative number (ms)")
    stats = nodes.get("stats")
    if stats is None:
        return
    if not isinstance(stats, dict):
        raise SchemaError(f"ranks.nodes.stats must be an object or null; got {_show(stats)}.")
    for key, v in stats.items():
        if key == "straggler":
            _column(v, "ranks.nodes.stats.straggler", n, lambda x: x in ranks, "a rank among ranks.ranks")
        elif key == "ranks":
            _column(v, "ranks.nodes.stats.ranks", n, _nonneg_int, "a count of ranks")
        else:
            _column(v, f"ranks.nodes.stats.{key}", n, _is_num, "a finite number")


def _check_divergent(div: Any, ranks: List[int], shown: List[int], ids: List[set]) -> None:
    """``ranks.divergent``: each divergent rank, the reference nodes it lacks and the nodes only its graph has."""
    if not isinstance(div, list):
        raise SchemaError(f"ranks.divergent must be a list or null; got {_show(div)}.")
    for j, d in enumerate(div):
        if not isinstance(d, dict) or d.get("rank") not in ranks:
            raise SchemaError(f"ranks.divergent[{j}] must be an object whose \"rank\" is among ranks.ranks.")
        removed = d.get("removed")
        if removed is not None and (not isinstance(removed, list) or
                                    not all(_nonneg_int(x) and x in ids[0] for x in removed)):
            raise SchemaError(f"ranks.divergent[{j}].removed must be a list of node ids of the reference.")
        added = d.get("added")
        if added is not None and (not isinstance(added, list) or not all(_nonneg_int(x) for x in added)):
            raise SchemaError(f"ranks.divergent[{j}].added must be a list of node ids (of that rank's graph).")
        if d["rank"] in shown:
            own = ids[shown.index(d["rank"])]
            if added and not all(x in own for x in added):
                raise SchemaError(f"ranks.divergent[{j}].added names a node rank {d['rank']}'s graph does not "
                                  f"have.")


def _num_or_null(v: Any) -> bool:
    return v is None or _is_num(v)


def _check_rank_words(r: Dict[str, Any], ranks: List[int], ids: List[set]) -> None:
    """The fields the words and the table read (typed as they need them: a hostile file never crashes the
    report): ``straggler``, ``per_rank``, ``unused``, and each divergent rank's ``first`` and ``lines``."""
    s = r.get("straggler")
    if s is not None:
        if not isinstance(s, dict) or s.get("rank") not in ranks or not all(
                _is_num(s.get(k)) for k in ("compute_ms", "median_ms", "excess_ms")) \
                or not _num_or_null(s.get("node_excess_ms")) \
                or not (s.get("node") is None or (_nonneg_int(s["node"]) and s["node"] in ids[0])):
            raise SchemaError("ranks.straggler must be null or {\"rank\" (among ranks.ranks), \"compute_ms\", "
                              "\"median_ms\", \"excess_ms\" (numbers), \"node\" (a reference node id or null), "
                              "\"node_excess_ms\" (a number or null)}.")
    per = r.get("per_rank")
    if per is not None:
        if not isinstance(per, list):
            raise SchemaError(f"ranks.per_rank must be a list or null; got {_show(per)}.")
        for j, p in enumerate(per):
            if not isinstance(p, dict) or p.get("rank") not in ranks or not _nonneg_int(p.get("nodes")) \
                    or not all(_num_or_null(p.get(k)) for k in ("forward_ms", "backward_ms", "compute_ms",
                                                                "wait_ms")) \
                    or not isinstance(p.get("same_structure"), bool) \
                    or not (isinstance(p.get("unused"), list) and all(isinstance(x, str) for x in p["unused"])):
                raise SchemaError(f"ranks.per_rank[{j}] must be {{\"rank\", \"nodes\" (an integer), \"forward_ms\", "
                                  f"\"backward_ms\", \"compute_ms\", \"wait_ms\" (numbers or null), "
                                  f"\"same_structure\" (true/false), \"unused\" (a list of strings)}}.")
    unused = r.get("unused")
    if unused is not None and (not isinstance(unused, dict) or not all(
            isinstance(v, list) and all(isinstance(x, str) for x in v) and k in {str(x) for x in ranks}
            for k, v in unused.items())):
        raise SchemaError("ranks.unused must be an object mapping a rank (\"1\") to a list of parameter names.")
    for j, d in enumerate(r.get("divergent") or []):
        first = d.get("first") if isinstance(d, dict) else None
        if first is not None and (not isinstance(first, dict) or not all(
                first.get(k) is None or isinstance(first[k], str) for k in ("op", "source", "code", "in"))):
            raise SchemaError(f"ranks.divergent[{j}].first must be null or an object of strings (op, source, code, "
                              f"in) and its node id.")
        lines = d.get("lines") if isinstance(d, dict) else None
        if lines is not None and not (isinstance(lines, list) and all(isinstance(x, str) for x in lines)):
            raise SchemaError(f"ranks.divergent[{j}].lines must be a list of strings (source lines).")
