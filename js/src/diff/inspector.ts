/**
 * The diff Inspector: a matched pair side by side, field by field, with the fields named in `changed` marked; or,
 * for a node without a counterpart, "no counterpart (added / removed)" above that node's full record.
 */
import { h } from "../ui/dom";
import { renderInspector, type InspectorActions } from "../ui/inspector";
import { formatBytesLong, formatMs, formatShape, formatValue, shortShape } from "../model/format";
import type { GraphNode } from "../schema/types";
import type { GraphModel } from "../model/graph";
import type { Hierarchy, Cluster } from "../model/grouping";
import { STATUS_NAMES, type DiffModel, type Side } from "./model";

type Field = { key: string; label: string; show(n: GraphNode): string };

const list = <T>(xs: T[] | null, f: (x: T) => string) => (xs && xs.length ? xs.map(f).join("; ") : "—");
const opt = (v: number | null, f: (v: number) => string) => (v === null ? "—" : f(v));

/** Field rows of the pair table; their keys are the names the diff uses in `changed`. */
export const PAIR_FIELDS: Field[] = [
  { key: "op", label: "op", show: (n) => n.op },
  { key: "kind", label: "kind", show: (n) => n.kind },
  { key: "module", label: "module", show: (n) => (n.module === null ? "—" : n.module === "" ? "(top level)" : n.module) },
  { key: "source", label: "source", show: (n) => n.source ?? "—" },
  { key: "code", label: "code", show: (n) => n.code ?? "—" },
  { key: "outputs", label: "outputs", show: (n) => list(n.outputs, (o) => (o ? shortShape(o.shape, o.dtype) || "?" : "?")) },
  { key: "out_stride", label: "output strides", show: (n) => list(n.out_stride, (s) => formatShape(s)) },
  { key: "out_contiguous", label: "contiguous", show: (n) => list(n.out_contiguous, (c) => (c === null ? "?" : String(c))) },
  { key: "saved", label: "saved tensors", show: (n) => list(n.saved, (s) => `${s.name} ${s.freed ? "(freed)" : formatShape(s.shape)}`) },
  { key: "saved_bytes", label: "saved", show: (n) => formatBytesLong(n.saved_bytes) },
  { key: "grad_bytes", label: "gradient written", show: (n) => opt(n.grad_bytes, formatBytesLong) },
  { key: "peak_bytes", label: "alive at the peak", show: (n) => opt(n.peak_bytes ?? null, formatBytesLong) },
  { key: "fwd_ms", label: "forward", show: (n) => opt(n.fwd_ms, formatMs) },
  { key: "bwd_ms", label: "backward", show: (n) => opt(n.bwd_ms, formatMs) },
  { key: "attrs", label: "attributes", show: (n) => (Object.keys(n.attrs).length ? formatValue(n.attrs, 300) : "—") },
  { key: "tensor", label: "leaf tensor", show: (n) => (n.tensor ? shortShape(n.tensor.shape ?? null, n.tensor.dtype ?? null) || "?" : "—") },
  { key: "seq", label: "seq", show: (n) => (n.seq === null ? "—" : String(n.seq)) },
];

export interface PairContext {
  diff: DiffModel;
  labels: [string, string];
  hiers: [Hierarchy, Hierarchy];
  expanded: [Set<Cluster>, Set<Cluster>];
  /** the side the selection was made on, and the selected node index on each side (-1 for none) */
  side: Side;
  nodes: [number, number];
  actions: [InspectorActions, InspectorActions];
}

export function renderPairInspector(el: HTMLElement, c: PairContext): void {
  const [ia, ib] = c.nodes;
  if (ia < 0 && ib < 0) {
    el.replaceChildren(h("p", { class: "gw-empty", text: "Click a node on either side: its counterpart on the other side is selected too, and the two are compared here." }));
    return;
  }
  if (ia < 0 || ib < 0) {
    const side: Side = ia >= 0 ? 0 : 1;
    const i = c.nodes[side];
    const st = STATUS_NAMES[c.diff.status[side][i]];
    const body = h("div", {});
    renderInspector(body, c.diff.models[side], c.hiers[side], i, c.expanded[side], c.actions[side]);
    const why = st === "added" ? `no counterpart (added): only in ${c.labels[1]}` : st === "removed" ? `no counterpart (removed): only in ${c.labels[0]}` : "no counterpart";
    el.replaceChildren(h("div", { class: "gw-pair-head" }, h("span", { class: `gw-badge gw-st-${st}`, text: st }), " ", h("span", { class: "gw-sub", text: c.labels[side] })),
      h("p", { class: "gw-nocounterpart", text: why }), body);
    return;
  }
  const a = c.diff.models[0].nodes[ia], b = c.diff.models[1].nodes[ib];
  const fields = new Set(c.diff.fieldsOf(0, ia));
  const st = STATUS_NAMES[c.diff.status[0][ia]];
  const rows = PAIR_FIELDS.map((f) => ({ f, va: f.show(a), vb: f.show(b) }))
    .filter(({ f, va, vb }) => fields.has(f.key) || va !== "—" || vb !== "—");
  const known = new Set(PAIR_FIELDS.map((f) => f.key));
  for (const k of fields) if (!known.has(k)) rows.push({ f: { key: k, label: k, show: () => "" }, va: raw(a, k), vb: raw(b, k) });
  const table = h("table", { class: "gw-grid gw-pair" },
    h("thead", {}, h("tr", {}, h("th", { text: "" }), h("th", { text: c.labels[0] }), h("th", { text: c.labels[1] }))),
    h("tbody", {}, ...rows.map(({ f, va, vb }) => h("tr", { class: fields.has(f.key) ? "gw-changed-row" : "", attrs: { "data-field": f.key } },
      h("th", { text: fields.has(f.key) ? `≠ ${f.label}` : f.label }), h("td", { text: va }), h("td", { text: vb })))));
  el.replaceChildren(
    h("div", { class: "gw-pair-head" }, h("span", { class: `gw-badge gw-st-${st}`, text: st }), " ",
      h("span", { class: "gw-sub", text: `${c.labels[0]} #${a.id} ↔ ${c.labels[1]} #${b.id}` })),
    h("h3", { class: "gw-insp-op", text: a.op === b.op ? a.op : `${a.op} → ${b.op}` }),
    fields.size ? h("p", { class: "gw-sub", text: `differs in: ${[...fields].join(", ")}` }) : h("p", { class: "gw-sub", text: "no field differs" }),
    table,
    ...[links(c, 0, ia), links(c, 1, ib)].filter((x): x is HTMLElement => !!x));
}

function raw(n: GraphNode, k: string): string {
  const v = (n as unknown as Record<string, unknown>)[k];
  return v === null || v === undefined ? "—" : formatValue(v, 300);
}

/** "Inputs of A's node": a compact list that selects on click (the full record is one click away on each side). */
function links(c: PairContext, side: Side, i: number): HTMLElement | null {
  const m: GraphModel = c.diff.models[side];
  const ins = Array.from(m.predsOf(i));
  if (!ins.length) return null;
  return h("section", { class: "gw-section" }, h("h4", { text: `inputs in ${c.labels[side]} (${ins.length})` }),
    h("ul", { class: "gw-links" }, ...ins.slice(0, 20).map((j) => h("li", {},
      h("button", { class: "gw-link", text: `${m.nodes[j].op} #${m.nodes[j].id}`, attrs: { type: "button" }, on: { click: () => c.actions[side].select(j) } }),
      c.diff.status[side][j] >= 2 ? ` (${STATUS_NAMES[c.diff.status[side][j]]})` : ""))));
}
