/**
 * The Changes tab: one row per op (or per source line, toggled) with how many nodes were added, removed and
 * changed, and the deltas of gradient bytes, backward time and saved bytes. Rows come sorted from Python; a click
 * on a row selects its first node on both sides and marks all of its nodes.
 */
import { h } from "../ui/dom";
import { formatBytes, formatMs } from "../model/format";
import type { ChangeRow, DiffDoc } from "../schema/diff";

export type ChangesBy = "op" | "source";
const MAX_ROWS = 300;

function signed(v: number | null, format: (v: number) => string): string {
  if (v === null || v === 0) return "";
  return v > 0 ? `+${format(v)}` : `−${format(-v)}`;
}

/** The row as text cells: key, +added, −removed, ~changed, Δ gradient, Δ backward, Δ saved. */
export function rowCells(r: ChangeRow): string[] {
  return [r.key, r.added.length ? `+${r.added.length}` : "", r.removed.length ? `−${r.removed.length}` : "",
    r.changed.length ? `~${r.changed.length}` : "", signed(r.delta.grad_bytes, formatBytes), signed(r.delta.bwd_ms, formatMs),
    signed(r.delta.saved_bytes, formatBytes)];
}

const HEAD = ["", "added", "removed", "changed", "Δ grad", "Δ bwd", "Δ saved"];
/** what the table's narrow header cells show (HEAD is the text form) */
const SHORT = ["", "+", "−", "~", "Δ grad", "Δ bwd", "Δ saved"];
const TITLES = ["", "nodes only in B", "nodes only in A", "matched nodes that differ", "gradient bytes written, B − A", "backward time, B − A", "saved bytes, B − A"];

export class ChangesTable {
  readonly el: HTMLElement;
  by: ChangesBy = "op";
  private selected: ChangeRow | null = null;
  private buttons: Record<ChangesBy, HTMLButtonElement>;
  private holder: HTMLElement;

  constructor(private doc: DiffDoc, private onPick: (row: ChangeRow) => void) {
    const mk = (by: ChangesBy, label: string) => h("button", { class: "gw-seg", text: label, attrs: { type: "button", "data-by": by, "aria-pressed": "false" }, on: { click: () => this.show(by) } });
    this.buttons = { op: mk("op", "by op"), source: mk("source", "by source") };
    this.holder = h("div", { class: "gw-changes-rows" });
    this.el = h("div", { class: "gw-changes" }, h("div", { class: "gw-segs", attrs: { role: "group", "aria-label": "Group changes" } }, this.buttons.op, this.buttons.source), this.holder);
    this.show("op");
  }

  rows(by: ChangesBy = this.by): ChangeRow[] {
    return by === "op" ? this.doc.changes.by_op : this.doc.changes.by_source;
  }

  show(by: ChangesBy): void {
    this.by = by;
    for (const k of Object.keys(this.buttons) as ChangesBy[]) this.buttons[k].setAttribute("aria-pressed", String(k === by));
    const rows = this.rows();
    if (!rows.length) {
      this.holder.replaceChildren(h("p", { class: "gw-empty", text: "No differences: every node of A has an unchanged counterpart in B." }));
      return;
    }
    const body = h("tbody", {}, ...rows.slice(0, MAX_ROWS).map((r, k) => {
      const c = rowCells(r);
      const tr = h("tr", { attrs: { "data-row": String(k), tabindex: "0" }, on: {
        click: () => this.pick(r, tr),
        keydown: (ev) => { if ((ev as KeyboardEvent).key === "Enter") this.pick(r, tr); },
      } },
      h("td", { class: "gw-key", text: c[0], title: c[0] }),
      h("td", { class: "gw-num gw-added", text: c[1] }), h("td", { class: "gw-num gw-removed", text: c[2] }), h("td", { class: "gw-num gw-changed", text: c[3] }),
      ...c.slice(4).map((x) => h("td", { class: `gw-num ${x.startsWith("−") ? "gw-less" : x ? "gw-more" : ""}`, text: x })));
      if (r === this.selected) tr.classList.add("gw-sel");
      return tr;
    }));
    const head = h("tr", {}, h("th", { text: by === "op" ? "op" : "source" }), ...SHORT.slice(1).map((x, k) => h("th", { class: "gw-num", text: x, title: `${HEAD[k + 1]}: ${TITLES[k + 1]}` })));
    const note = rows.length > MAX_ROWS ? h("p", { class: "gw-note", text: `first ${MAX_ROWS} of ${rows.length} rows` }) : null;
    this.holder.replaceChildren(h("table", { class: "gw-grid gw-changestable" }, h("thead", {}, head), body), ...(note ? [note] : []));
  }

  private pick(r: ChangeRow, tr: HTMLElement): void {
    this.selected = r;
    for (const x of this.holder.querySelectorAll("tr.gw-sel")) x.classList.remove("gw-sel");
    tr.classList.add("gw-sel");
    this.onPick(r);
  }

  /** The rows as text, one line per row, cells separated by tabs (the automation API's changesText). */
  text(by: ChangesBy = this.by): string {
    return [[by, ...HEAD.slice(1)].join("\t"), ...this.rows(by).map((r) => rowCells(r).join("\t"))].join("\n");
  }
}
