/**
 * The N-way inspector: the selected node as the graph view shows it (ui/inspector.ts, in the pane it was picked
 * in), then where it is in every pane (its counterpart, "fused into" a compiled region, or missing), and for ranks
 * its time on every rank with the minimum, median, maximum and the slowest rank. Built only with dom.h.
 */
import type { Cluster, Hierarchy } from "../model/grouping";
import { formatMs } from "../model/format";
import { renderInspector } from "../ui/inspector";
import { gridTable, h, kvTable } from "../ui/dom";
import type { NWayModel } from "./model";
import type { NodeRankTimes, RankTimes } from "./ranks";

export interface NWayInspectorInput {
  model: NWayModel;
  labels: string[];
  hiers: Hierarchy[];
  expanded: Set<Cluster>[];
  /** the pane the selection was made in, and its node index (-1: nothing selected) */
  pane: number;
  node: number;
  ranks: RankTimes | null;
  select(pane: number, node: number): void;
  collapse(pane: number, c: Cluster): void;
}

export function renderNWayInspector(el: HTMLElement, x: NWayInspectorInput): void {
  const { model: m, pane: k, node } = x;
  renderInspector(el, m.models[k], x.hiers[k], node, x.expanded[k], {
    select: (i) => x.select(k, i), collapse: (c) => x.collapse(k, c),
  });
  if (node < 0) return;
  const extra: HTMLElement[] = [];
  extra.push(h("p", { class: "gw-nway-insp-where", text: `in ${x.labels[k]}` }));
  extra.push(section("In every pane", counterpartTable(x)));
  const r = m.refOf(k, node);
  if (x.ranks) {
    const t = r >= 0 ? x.ranks.of(m.models[0].nodes[r].id) : null;
    extra.push(section("Per rank", t ? rankTable(t) : h("p", { class: "gw-note",
      text: r >= 0 ? "The ranks were not timed on this node." : "Only this rank has this node: no other rank's time to compare." })));
  }
  // after the op and its badges, before the node's own sections
  const anchor = el.querySelector(".gw-badges");
  const at = anchor?.nextSibling ?? null;
  for (const e of extra) el.insertBefore(e, at);
}

function section(title: string, ...body: HTMLElement[]): HTMLElement {
  return h("section", { class: "gw-section gw-nway-section" }, h("h4", { text: title }), ...body);
}

function counterpartTable(x: NWayInspectorInput): HTMLElement {
  const m = x.model, cps = m.counterparts(x.pane, x.node);
  const rows = cps.map((c, j) => {
    const label = h("span", { class: j === x.pane ? "gw-nway-here" : "", text: x.labels[j] });
    if (c.node < 0) return [label, h("span", { class: "gw-nway-missing", text: "—  no counterpart" })];
    const n = m.models[j].nodes[c.node];
    const link = h("button", { class: "gw-link", text: `${n.op} #${n.id}`, attrs: { type: "button" }, on: { click: () => x.select(j, c.node) } });
    return [label, h("span", {}, link, c.fused ? h("span", { class: "gw-nway-fused", text: " fused (compiled region)" }) : null)];
  });
  const t = gridTable(["pane", "node"], rows, "gw-grid gw-nway-cp");
  t.setAttribute("data-nway", "counterparts");
  return t;
}

function rankTable(t: NodeRankTimes): HTMLElement {
  const wrap = h("div", { attrs: { "data-nway": "ranks" } });
  wrap.appendChild(kvTable([
    ["min", formatMs(t.min)], ["median", formatMs(t.median)], ["max", formatMs(t.max)], ["spread", formatMs(t.spread)],
    ["slowest", t.straggler === null ? null : `rank ${t.straggler}`],
  ]));
  const rows = t.rows.map((r) => [
    h("span", { class: r.rank === t.straggler ? "gw-nway-slow" : "", text: `rank ${r.rank}${r.rank === t.straggler ? " (slowest)" : ""}` }),
    formatMs(r.fwd), formatMs(r.bwd), r.step === null && r.fwd === null && r.bwd === null ? "absent" : formatMs(r.step),
  ]);
  const g = gridTable(["rank", "forward", "backward", "fwd + bwd"], rows, "gw-grid gw-nway-ranktimes");
  g.querySelectorAll("tbody tr").forEach((tr, i) => { if (t.rows[i].rank === t.straggler) tr.classList.add("gw-nway-slowrow"); });
  wrap.appendChild(g);
  return wrap;
}
