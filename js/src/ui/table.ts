/** "Top nodes": the most expensive nodes, sortable by any column; a click selects the node in the graph. */
import type { GraphModel } from "../model/graph";
import { h } from "./dom";
import { formatBytes, formatMs } from "../model/format";

export type SortKey = "op" | "source" | "module" | "fwd_ms" | "bwd_ms" | "saved_bytes";
const COLUMNS: { key: SortKey; label: string; numeric: boolean }[] = [
  { key: "op", label: "op", numeric: false },
  { key: "source", label: "source", numeric: false },
  { key: "module", label: "module", numeric: false },
  { key: "fwd_ms", label: "fwd", numeric: true },
  { key: "bwd_ms", label: "bwd", numeric: true },
  { key: "saved_bytes", label: "saved", numeric: true },
];
const MAX_ROWS = 200;

export class TopTable {
  readonly el: HTMLDivElement;
  key: SortKey;
  desc = true;
  private selected = -1;

  constructor(private model: GraphModel, private onPick: (node: number) => void) {
    this.el = h("div", { class: "gw-top" });
    this.key = model.doc.meta.timed ? "bwd_ms" : "saved_bytes";
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
    const val = (i: number) => nodes[i][k];
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

  render(): void {
    const head = h("tr", {}, ...COLUMNS.map((c) => {
      const arrow = c.key === this.key ? (this.desc ? " ▼" : " ▲") : "";
      return h("th", { attrs: { "data-key": c.key, role: "button", tabindex: "0", "aria-sort": c.key === this.key ? (this.desc ? "descending" : "ascending") : "none" },
        on: { click: () => this.sortBy(c.key), keydown: (ev) => { if ((ev as KeyboardEvent).key === "Enter") this.sortBy(c.key); } } },
      c.label + arrow);
    }));
    const body = h("tbody", {}, ...this.rows().map((i) => {
      const n = this.model.nodes[i];
      const tr = h("tr", { attrs: { "data-node": String(n.id) }, on: { click: () => this.onPick(i) } },
        h("td", { text: n.op, title: n.op }), h("td", { text: n.source ?? "", title: n.code ?? "" }), h("td", { text: n.module ?? "", title: n.module ?? "" }),
        h("td", { class: "gw-num", text: n.fwd_ms === null ? "" : formatMs(n.fwd_ms) }),
        h("td", { class: "gw-num", text: n.bwd_ms === null ? "" : formatMs(n.bwd_ms) }),
        h("td", { class: "gw-num", text: formatBytes(n.saved_bytes) }));
      if (n.id === this.selected) tr.classList.add("gw-sel");
      return tr;
    }));
    const note = this.model.n > MAX_ROWS ? h("p", { class: "gw-note", text: `first ${MAX_ROWS} of ${this.model.n} nodes` }) : null;
    this.el.replaceChildren(h("table", { class: "gw-grid gw-toptable" }, h("thead", {}, head), body), ...(note ? [note] : []));
  }
}
