/** Everything in one node record, laid out for reading. Built only with dom.h (text, never markup). */
import type { GraphModel } from "../model/graph";
import type { Cluster, Hierarchy } from "../model/grouping";
import { clusterTitle } from "../model/grouping";
import { gridTable, h, kvTable } from "./dom";
import { formatBytesLong, formatMs, formatShape, formatValue } from "../model/format";
import { outputBytes } from "../model/colour";
import { displaySource, ownRoot } from "../model/paths";

export interface InspectorActions {
  select(node: number): void;
  collapse(c: Cluster): void;
}

export function renderInspector(el: HTMLElement, model: GraphModel, hier: Hierarchy, node: number, expanded: Set<Cluster>, act: InspectorActions): void {
  if (node < 0) {
    el.replaceChildren(h("p", { class: "gw-empty", text: "Click a node to inspect it. Click a group (stacked box) to expand it." }));
    return;
  }
  const n = model.nodes[node];
  const parts: (HTMLElement | null)[] = [];
  parts.push(h("h3", { class: "gw-insp-op", text: n.op }));
  parts.push(h("div", { class: "gw-badges" },
    h("span", { class: `gw-badge gw-kind-${n.kind === "leaf" || n.kind === "custom" ? n.kind : "backward"}`, text: n.kind }),
    h("span", { class: "gw-badge", text: `id ${n.id}` }),
    n.seq !== null ? h("span", { class: "gw-badge", text: `seq ${n.seq}` }) : null));

  // an untraced capture knows no module or source line: no empty heading then
  if (n.module !== null || n.source || n.code) {
    parts.push(section("Where", kvTable([
      ["module", n.module === null ? null : n.module === "" ? "(top level)" : n.module],
      ["source", sourceText(n.source, ownRoot(model))],
      // a line inside a library (torch.nn...) that the user's line called: where the node was really made
      ["library line", sourceText(n.lib_source ?? null, ownRoot(model))],
    ]), n.code ? h("pre", { class: "gw-code", text: n.code }) : null));
  }

  const ob = outputBytes(n);
  parts.push(section("Cost", kvTable([
    ["saved", formatBytesLong(n.saved_bytes)],
    // memory-profiled graphs: what the node holds when the step's memory peaks
    ["alive at the peak", n.peak_bytes !== null && n.peak_bytes !== undefined ? formatBytesLong(n.peak_bytes) : null],
    ["gradient written", n.grad_bytes !== null ? formatBytesLong(n.grad_bytes) : null],
    ["output size", Number.isFinite(ob) ? formatBytesLong(ob) : null],
    ["forward", n.fwd_ms !== null ? formatMs(n.fwd_ms) : null],
    ["backward", n.bwd_ms !== null ? formatMs(n.bwd_ms) : null],
  ])));

  if (n.outputs && n.outputs.length) {
    parts.push(section(`Outputs (${n.outputs.length})`, gridTable(["#", "shape", "dtype", "device", "stride", "contig."],
      n.outputs.map((o, k) => [String(k), formatShape(o?.shape), o?.dtype ?? "—", o?.device ?? "—",
        n.out_stride?.[k] ? formatShape(n.out_stride[k]) : "—",
        n.out_contiguous?.[k] === undefined || n.out_contiguous?.[k] === null ? "—" : String(n.out_contiguous[k])]))));
  }

  if (n.saved.length) {
    // one small card per tensor: ten columns do not fit a side panel
    parts.push(section(`Saved tensors (${n.saved.length})`, ...n.saved.map((s) =>
      h("div", { class: `gw-tensor${s.freed ? " gw-freed" : ""}${s.stale ? " gw-stale" : ""}` },
        h("div", { class: "gw-tensor-name" }, h("code", { text: s.name }),
          s.freed ? h("span", { class: "gw-badge", text: "freed" }) : null,
          s.packed ? h("span", { class: "gw-badge gw-packed", text: s.packed === "checkpoint" ? "checkpointed" : "behind hooks" }) : null,
          s.stale ? h("span", { class: "gw-badge gw-stale-badge", text: "stale" }) : null),
        kvTable([
          ["shape", s.freed && !s.shape ? "— (freed by backward)" : s.packed && !s.shape ? "— (packed, not unpacked)" : formatShape(s.shape)],
          // checkpoint recomputes it in backward; save_on_cpu and other hooks hold whatever their pack hook returned
          ["packed", s.packed === "checkpoint" ? "by torch.utils.checkpoint: recomputed in backward, not held by the graph"
            : s.packed === "hooks" ? "by saved-tensor hooks (save_on_cpu, your own): held wherever the pack hook put it" : null],
          ["stale", s.stale ? "modified in place after it was saved: backward through this node will fail" : null],
          ["stride", s.stride ? formatShape(s.stride) : null],
          ["dtype", s.dtype], ["device", s.device],
          ["bytes", s.bytes === null ? null : formatBytesLong(s.bytes)],
          ["storage", s.storage_bytes === null ? null : `${formatBytesLong(s.storage_bytes)}${s.storage !== null && s.storage !== undefined ? ` · storage #${s.storage}` : ""}`],
          ["memory format", s.memory_format],
          ["contiguous", s.contiguous === null || s.contiguous === undefined ? null : String(s.contiguous)],
          ["freed", s.freed ? "yes" : "no"],
        ])))));
  }

  const attrs = Object.entries(n.attrs);
  if (attrs.length) parts.push(section("Attributes", kvTable(attrs.map(([k, v]) => [k, formatValue(v)]))));

  if (n.tensor) {
    const t = n.tensor;
    parts.push(section("Leaf tensor", kvTable([
      ["name", t.name ?? null], ["shape", formatShape(t.shape)], ["stride", t.stride ? formatShape(t.stride) : null],
      ["dtype", t.dtype ?? null], ["device", t.device ?? null], ["bytes", t.bytes !== undefined && t.bytes !== null ? formatBytesLong(t.bytes) : null],
      ["memory format", t.memory_format ?? null],
      ["contiguous", t.contiguous === undefined || t.contiguous === null ? null : String(t.contiguous)],
      ["requires_grad", t.requires_grad === undefined || t.requires_grad === null ? null : String(t.requires_grad)],
    ])));
  }

  parts.push(neighbours(model, node, act));

  const anc = hier.ancestors(node);
  if (anc.length) {
    parts.push(section("Groups", h("ul", { class: "gw-groups" }, ...anc.map((c) =>
      h("li", {}, `${c.kind} `, h("strong", { text: clusterTitle(c) }), ` (${c.size} ops) `,
        expanded.has(c) ? h("button", { class: "gw-link", text: "collapse", attrs: { type: "button" }, on: { click: () => act.collapse(c) } }) : null)))));
  }
  el.replaceChildren(...parts.filter((p): p is HTMLElement => !!p));
}

function section(title: string, ...body: (HTMLElement | null)[]): HTMLElement {
  return h("section", { class: "gw-section" }, h("h4", { text: title }), ...body);
}

function neighbours(model: GraphModel, node: number, act: InspectorActions): HTMLElement | null {
  const ins: HTMLElement[] = [];
  const outs: HTMLElement[] = [];
  const link = (other: number, shape: number[] | null, dtype: string | null, slot: string) =>
    h("li", {}, h("button", { class: "gw-link", text: `${model.nodes[other].op} #${model.nodes[other].id}`, attrs: { type: "button" }, on: { click: () => act.select(other) } }),
      ` ${slot}${shape ? formatShape(shape) : ""}${dtype ? ` ${dtype}` : ""}`);
  model.edges.forEach((e, k) => {
    // an edge record stands for one connection, plus those in `also` (x * x feeds slots 0 and 1 of the same node)
    for (const c of [e, ...(e.also ?? [])]) {
      if (model.eDst[k] === node) ins.push(link(model.eSrc[k], c.shape, c.dtype, c.slot !== null ? `slot ${c.slot} · ` : ""));
      if (model.eSrc[k] === node) outs.push(link(model.eDst[k], c.shape, c.dtype, c.output !== null ? `out ${c.output} · ` : ""));
    }
  });
  if (!ins.length && !outs.length) return null;
  const cap = (l: HTMLElement[]) => (l.length > 50 ? [...l.slice(0, 50), h("li", { text: `… ${l.length - 50} more` })] : l);
  return section("Connections",
    ins.length ? h("div", {}, h("div", { class: "gw-sub", text: `inputs (${ins.length})` }), h("ul", { class: "gw-links" }, ...cap(ins))) : null,
    outs.length ? h("div", {}, h("div", { class: "gw-sub", text: `used by (${outs.length})` }), h("ul", { class: "gw-links" }, ...cap(outs))) : null);
}

/** A source shortened for reading (package- or graph-relative), the full path on hover. */
function sourceText(source: string | null, root: string): HTMLElement | null {
  if (!source) return null;
  // a break opportunity after each folder, so a wrapped path breaks between names rather than inside one
  // (<wbr>, not a zero-width space: the text copies as the path)
  const parts = displaySource(source, root).split(/(?<=[\\/])/);
  return h("span", { class: "gw-path", title: source },
    ...parts.flatMap((p, k) => (k ? [h("wbr"), p] : [p])));
}
