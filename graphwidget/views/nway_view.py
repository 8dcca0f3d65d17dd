"""The N-way views.

* **Export** (:func:`graphwidget.export_html` of a :class:`~graphwidget.MultiDiff`, ``views/export.py``): one file
  with the verdict table on top (:func:`static_nway_html`), then the front end's N-way view (``js/src/nway/``): one
  pane per side, the reference once, side by side, pan and zoom synced, a click selecting the counterparts in every
  pane, each pane's header giving its verdict against the reference. The whole ``"graphwidget-nway"`` document is
  inlined once (the binary payload of ``views/packed.py``, base64, ``id="gw-nway-data"``) and mounted into
  ``#gw-nway-root`` by the viewer bundle.
* **Widget** (:class:`~graphwidget.views.nway_widget.NWayWidget`): the same view and the same payload
  (:func:`payload`, in its ``_nway`` trait), mounted by the widget bundle; the reference node selected in every pane
  syncs back to Python as ``selected``. Where widgets do not run, the table (:func:`static_nway_html`) is shown.

Loads neither torch nor, until a widget is made, anywidget.
"""
from __future__ import annotations

import html
from typing import Any, Tuple

from .._util.text import human_bytes
from ..model import io, schema
from .packed import pack
from .payload import COLOUR_METRICS, available_metrics, default_colour

_WHAT = "a MultiDiff (gw.compare of N sides, a RankSet's nway()), its to_dict() or its JSON text"


def as_nway(obj: Any, caller: str) -> Any:
    """A :class:`~graphwidget.MultiDiff` from one, its document dict or its JSON text."""
    from ..analysis.diff.multi import MultiDiff
    if isinstance(obj, MultiDiff):
        return obj
    nway = getattr(obj, "nway", None)
    if callable(nway) and not isinstance(obj, (str, bytes, dict)):  # a RankSet: its default view
        return nway()
    if isinstance(obj, (str, bytes, bytearray)):
        obj = io.parse(obj, who=caller)
    if isinstance(obj, dict) and obj.get("format") == schema.NWAY_FORMAT:
        return MultiDiff.from_dict(obj, who=caller)
    raise TypeError(f"{caller} expects {_WHAT}; got {type(obj).__name__}.")


def is_nway(obj: Any) -> bool:
    """True for a MultiDiff, a RankSet or an N-way document (dict, or JSON text by its ``format``)."""
    from ..analysis.diff.multi import MultiDiff
    if isinstance(obj, MultiDiff) or type(obj).__name__ == "RankSet":
        return True
    if isinstance(obj, dict):
        return obj.get("format") == schema.NWAY_FORMAT
    if isinstance(obj, (str, bytes, bytearray)):
        head = obj[:400] if isinstance(obj, str) else bytes(obj[:400]).decode("utf-8", "replace")
        return f'"format":"{schema.NWAY_FORMAT}"' in "".join(head.split())
    return False


def metrics(d: Any) -> Tuple[str, ...]:
    """The colour metrics every graph has values for (one scale across panes)."""
    have = None
    for g in d.graphs.values():
        mine = set(available_metrics(g.nx._node.values()))
        have = mine if have is None else have & mine
    return tuple(m for m in COLOUR_METRICS if m in (have or {"none"}))


def colour(d: Any) -> str:
    """The colour the panes open with: ranks by their time spread over the ranks when timed, else the graphs'
    default (:func:`~graphwidget.views.payload.default_colour`)."""
    have = metrics(d)
    if d.kind == "ranks" and "rank_spread_ms" in have:
        return "rank_spread_ms"
    return default_colour(have)


def payload(d: Any) -> Tuple[bytes, str]:
    """The document as the binary payload of :mod:`.packed` (its head as ``MultiDiff.to_json`` writes it, each graph
    as typed columns; the same bytes for the same comparison), and the colour to open with."""
    return pack(d._head(), {"graphs": [d.graphs[x] for x in d.sides]}), colour(d)


# -- the table on top (and the static display) ------------------------------------------------------------------------
def _cell(key: str, v: Any) -> str:
    if v is None:
        return "-"
    if key in ("grad_bytes", "saved_bytes"):
        return ("+" if v > 0 else "−" if v < 0 else "") + human_bytes(abs(v))
    if key == "ms":
        return f"{v:.3g}"
    if isinstance(v, dict):
        if key == "fused":
            return f"{v['regions']} region{'s' if v['regions'] != 1 else ''}, {v['covers']} nodes"
        return str(v.get("text") or "-")
    return str(v)


def _esc(x: Any) -> str:
    return html.escape(str(x))


def static_nway_html(d: Any, top: int = 12) -> str:
    """The verdicts: the sentence, the table (a row per side, a column per verdict), the compiled regions and, for
    ranks, the straggler, the divergent ranks, unused parameters and the nodes whose time varies most across ranks.
    Every string from the comparison is escaped."""
    from ..analysis.diff import fusion
    from ..analysis.diff.multi import COLUMNS
    d = as_nway(d, "static_nway_html")
    rows = d.table()
    head = "".join(f"<th>{_esc(h)}</th>" for _, h in COLUMNS)
    body = []
    for r in rows:
        cls = " class='gw-nway-ref'" if r.get("reference") else (" class='gw-nway-bad'" if r.get("equivalent")
                                                                   is False else "")
        body.append(f"<tr{cls} data-side='{_esc(r['label'])}'>" +
                    "".join(f"<td data-key='{k}'>{_esc(_cell(k, r.get(k)))}</td>" for k, _ in COLUMNS) + "</tr>")
    parts = [f"<p class='gw-nway-sentence'><b>{_esc(d.sentence())}</b></p>"]
    if d.kind != "ranks" or len(d.sides) > 1:
        parts.append(f"<table class='gw-nway-table'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}"
                     f"</tbody></table>")
    regs = [(label, rec) for k, label in enumerate(d.sides) for rec in d.regions(k)]
    if regs:
        items = "".join(f"<li data-side='{_esc(label)}' data-node='{rec['node']}'>{_esc(label)}: "
                        f"{_esc(fusion.describe(rec, d.reference))}</li>" for label, rec in regs)
        parts.append(f"<div class='gw-nway-regions'><b>What got fused</b><ul>{items}</ul></div>")
    if d.ranks:
        parts.append(_ranks_html(d, top))
    title = "ranks" if d.kind == "ranks" else "N-way comparison"
    return (f"<div class='graphwidget-static graphwidget-nway-static'><b>graphwidget {title}: "
            f"{_esc(', '.join(d.sides))} (reference {_esc(d.reference)})</b>{''.join(parts)}"
            f"<small>A node selected in one pane is selected, through the reference, in all.</small></div>")


def _ms(v: Any) -> str:
    return "-" if v is None else f"{v:.3g}"


def _ranks_html(d: Any, top: int) -> str:
    from ..analysis.rank_words import top_spread
    r = d.ranks
    out = []
    per = r.get("per_rank") or []
    if per:
        rows = "".join(
            f"<tr data-rank='{p.get('rank')}'><td>{_esc(p.get('rank'))}</td><td>{_ms(p.get('forward_ms'))}</td>"
            f"<td>{_ms(p.get('backward_ms'))}</td><td>{_ms(p.get('compute_ms'))}</td><td>{_ms(p.get('wait_ms'))}</td>"
            f"<td>{_esc(p.get('nodes'))}</td><td>{'same' if p.get('same_structure') else 'DIFFERS'}</td>"
            f"<td>{_esc(_unused(p))}</td></tr>" for p in per)
        out.append("<table class='gw-nway-ranks'><thead><tr><th>rank</th><th>forward ms</th><th>backward ms</th>"
                   "<th>compute ms (nodes)</th><th>waiting ms</th><th>nodes</th><th>graph</th>"
                   f"<th>unused parameters</th></tr></thead><tbody>{rows}</tbody></table>")
    for div in r.get("divergent") or []:
        first = div.get("first") or {}
        out.append(f"<p class='gw-nway-divergent' data-rank='{_esc(div.get('rank'))}'>rank {_esc(div.get('rank'))}"
                   f"'s graph differs: {len(div.get('added') or [])} nodes only there, "
                   f"{len(div.get('removed') or [])} missing; divergent line "
                   f"<code>{_esc(first.get('source') or '?')}</code> <code>{_esc(first.get('code') or '')}</code>"
                   "</p>")
    spread = top_spread(r, top)
    if spread:
        g = d.graphs[d.reference]
        rows = "".join(
            f"<tr data-node='{n}'><td>{n}</td><td>{_esc(g.nx.nodes[n].get('op'))}</td>"
            f"<td>{_esc(g.nx.nodes[n].get('source') or '')}</td><td>{_ms(s['min'])}</td><td>{_ms(s['median'])}</td>"
            f"<td>{_ms(s['max'])}</td><td>{_esc(s['straggler'])}</td><td>{_ms(s['spread_ms'])}</td></tr>"
            for n, s in spread)
        out.append("<table class='gw-nway-spread'><caption>nodes whose time (forward + backward) varies most across "
                   "ranks</caption><thead><tr><th>node</th><th>op</th><th>source</th><th>min ms</th>"
                   "<th>median ms</th><th>max ms</th><th>slowest rank</th><th>spread ms</th></tr></thead>"
                   f"<tbody>{rows}</tbody></table>")
    return "".join(out)


# -- the export page ---------------------------------------------------------------------------------------------------
def page_body(d: Any) -> Tuple[str, str, bytes]:
    """``(header and panes HTML, colour, gzipped document)`` for :func:`graphwidget.views.export.render_html`."""
    gz, colour = payload(d)
    panes = (f'<div class="graphwidget-root gw-nway-root" id="gw-nway-root" data-gw-state="loading" '
             f'aria-label="{len(d.sides)} panes: {_esc(", ".join(d.sides))}"></div>')
    head = f'<header class="gw-nway-head">{static_nway_html(d)}</header>'
    return f'<div id="gw-nway" class="gw-nway" data-gw-state="loading">{head}{panes}</div>', colour, gz


#: The export page's head: the table scrolls sideways rather than running past a narrow window; the sentence is
#: left to the viewer's strip above the panes once the viewer shows it (said once, whole; a page whose script
#: cannot run keeps its own).
STYLE = (".gw-nway-head{padding:12px 16px;font:14px system-ui,-apple-system,'Segoe UI',Roboto,Arial,sans-serif}"
         ".gw-nway-head table{border-collapse:collapse;margin:8px 0;display:block;overflow-x:auto;max-width:100%}"
         ".gw-nway-head td,.gw-nway-head th{padding:2px 8px;"
         "border-bottom:1px solid #8884;text-align:left}.gw-nway-bad td{color:#b00020;font-weight:bold}"
         ".gw-nway:has(.gw-nway-summary .gw-diff-sentence) .gw-nway-head .gw-nway-sentence{display:none}"
         ".gw-nway-root{height:85vh;min-height:420px;border-top:1px solid #8884}")


def _unused(p: Any) -> str:
    """A rank's unused parameters: their names, "none", or "unknown" when no module was scanned."""
    return "unknown" if p.get("unused_scanned") is False else ", ".join(p.get("unused") or []) or "none"
