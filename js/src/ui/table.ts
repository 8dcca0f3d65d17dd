/**
 * "Top nodes": the most expensive nodes, sortable by any column; a click selects the node in the graph.
 * It has to fit a side panel: sources are shown as file:line relative to the folder all of them share (the full
 * path on hover), module paths wrap at their dots instead of being cut, and columns without any value (times of
 * an untimed capture) are left out, so the column the table is sorted by stays in view.
 */
import type { GraphModel } from "../model/graph";
import { h } from "./dom";
import { formatBytes, formatMs } from "../model/format";
import { shortOp } from "../model/grouping";
import { sharedFolder } from "../model/paths";

export type SortKey = "op" | "source" | "module" | "fwd_ms" | "bwd_ms" | "saved_bytes";
const COLUMNS: { key: SortKey; label: string; numeric: boolean; title: string }[] = [
  { key: "op", label: "op", numeric: false, title: "autograd node" },
  { key: "module", label: "module", numeric: false, title: "nn.Module path" },
  { key: "source", label: "source", numeric: false, title: "file:line, relative to the folder all sources share" },
  { key: "fwd_ms", label: "fwd", numeric: true, title: "forward time" },
  { key: "bwd_ms", label: "bwd", numeric: true, title: "backward time" },
  { key: "saved_bytes", label: "saved", numeric: true, title: "saved tensors' bytes" },
];
const MAX_ROWS = 200;
/** a relative source longer than this is cut from the left: the file name and line are the end of it */
const MAX_SOURCE = 24;

export class TopTable {
  readonly el: HTMLDivElement;
  key: SortKey;
  desc = true;
  private selected = -1;
  private columns: typeof COLUMNS;
  private root: string;

  constructor(private model: GraphModel, private onPick: (node: number) => void) {
    this.el = h("div", { class: "gw-top" });
    this.key = model.doc.meta.timed ? "bwd_ms" : "saved_bytes";
    const has = (k: SortKey) => model.nodes.some((n) => n[k] !== null && n[k] !== undefined && n[k] !== "");
    this.columns = COLUMNS.filter((c) => c.key === "op" || c.key === "saved_bytes" || has(c.key));
    this.root = sharedFolder(model.nodes.map((n) => n.source));
  }

  sortBy(key: SortKey): void {
    if (this.key === key) this.desc = !this.desc;
    else { this.key = key; this.desc = COLUMNS.find((c) => c.key === key)!.numeric; }
    this.render();
  }

  setSelected(node: number): void {
    this.selected = node;
    for (const tr of this.el.querySelectorAll("tr[data-node]")) tr.classList.toggle("gw-sel", Number(tr.getAttribute("data-node")) === node);
  }

  /** Row order: nulls always last, whatever the direction. */
  rows(): number[] {
    const { nodes } = this.model;
    const k = this.key;
    const idx = Array.from({ length: nodes.length }, (_, i) => i);
    const vals = nodes.map((n) => n[k]); // read once: a columnar node's field is a getter (model/columnar.ts)
    const val = (i: number) => vals[i];
    const dir = this.desc ? -1 : 1;
    idx.sort((a, b) => {
      const va = val(a), vb = val(b);
      if (va === null || va === undefined) return vb === null || vb === undefined ? a - b : 1;
      if (vb === null || vb === undefined) return -1;
      if (typeof va === "number" && typeof vb === "number") return (va - vb) * dir || a - b;
      return String(va).localeCompare(String(vb)) * dir || a - b;
    });
    return idx.slice(0, MAX_ROWS);
  }

  /** How a source is shown: relative to the common folder, cut from the left if still long. */
  shortSource(src: string | null): string {
    if (!src) return "";
    const rel = this.root && src.startsWith(this.root) ? src.slice(this.root.length) : src;
    return rel.length > MAX_SOURCE ? `…${rel.slice(rel.length - MAX_SOURCE + 1)}` : rel;
  }

  render(): void {
    const arrowOf = (key: SortKey) => (key === this.key ? (this.desc ? " ▼" : " ▲") : "");
    const sortAttrs = (key: SortKey) => ({ "data-key": key, role: "button", tabindex: "0",
      "aria-sort": key === this.key ? (this.desc ? "descending" : "ascending") : "none" });
    const sortOn = (key: SortKey) => ({
      click: (ev: Event) => { ev.stopPropagation(); this.sortBy(key); },
      keydown: (ev: Event) => { if ((ev as KeyboardEvent).key === "Enter") this.sortBy(key); },
    });
    const showModule = this.columns.some((c) => c.key === "module"), showSource = this.columns.some((c) => c.key === "source");
    const hasWhere = showModule || showSource;
    const heads: HTMLElement[] = [];
    for (const c of this.columns) {
      if (c.key === "module" || c.key === "source") continue;
      heads.push(h("th", { class: `${c.numeric ? "gw-num" : ""}${c.key === this.key ? " gw-sorted" : ""}`, title: c.title,
        attrs: sortAttrs(c.key), on: sortOn(c.key) }, c.label + arrowOf(c.key)));
      if (c.key === "op" && hasWhere) {
        // module and source share a column, one above the other: the panel is too narrow for both side by side
        const parts = this.columns.filter((x) => x.key === "module" || x.key === "source").map((x) =>
          h("span", { class: `gw-sortkey${x.key === this.key ? " gw-sorted" : ""}`, text: x.label + arrowOf(x.key), title: x.title,
            attrs: sortAttrs(x.key), on: sortOn(x.key) }));
        heads.push(h("th", { class: "gw-wherehead" }, ...parts.flatMap((p, k) => (k ? [" · ", p] : [p]))));
      }
    }
    const body = h("tbody", {}, ...this.rows().map((i) => {
      const n = this.model.nodes[i];
      const cells: HTMLElement[] = [];
      for (const c of this.columns) {
        if (c.key === "module" || c.key === "source") continue;
        if (c.key === "op") {
          // "Backward0" ends nearly every op: left out here (the full name on hover), it costs a third of the column
          cells.push(h("td", { class: "gw-opcell", text: shortOp(n.op), title: n.op }));
          if (hasWhere) {
            cells.push(h("td", { class: "gw-wherecell" },
              // zero-width spaces after the dots: a module path wraps between its parts, it is never cut
              showModule ? h("span", { class: "gw-modcell", text: (n.module ?? "").replace(/\./g, ".\u200b"), title: n.module ?? "" }) : null,
              showSource && n.source ? h("span", { class: "gw-src", text: this.shortSource(n.source), title: [n.source, n.code].filter(Boolean).join("\n") }) : null));
          }
        } else if (c.key === "fwd_ms") cells.push(h("td", { class: "gw-num", text: n.fwd_ms === null ? "" : formatMs(n.fwd_ms) }));
        else if (c.key === "bwd_ms") cells.push(h("td", { class: "gw-num", text: n.bwd_ms === null ? "" : formatMs(n.bwd_ms) }));
        else cells.push(h("td", { class: "gw-num", text: formatBytes(n.saved_bytes) }));
      }
      const tr = h("tr", { attrs: { "data-node": String(n.id) }, on: { click: () => this.onPick(i) } }, ...cells);
      if (n.id === this.selected) tr.classList.add("gw-sel");
      return tr;
    }));
    const note = this.model.n > MAX_ROWS ? h("p", { class: "gw-note", text: `first ${MAX_ROWS} of ${this.model.n} nodes` }) : null;
    const where = this.root ? h("p", { class: "gw-note gw-srcroot", text: `sources relative to ${this.root}`, title: this.root }) : null;
    this.el.replaceChildren(h("table", { class: "gw-grid gw-toptable" }, h("thead", {}, h("tr", {}, ...heads)), body),
      ...[where, note].filter((x): x is HTMLParagraphElement => !!x));
  }
}
