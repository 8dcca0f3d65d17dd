/**
 * The Findings tab: one row per finding of the rewrite advisor (computed in Python and carried in the graph JSON):
 * severity, rule, source line, the line's code, the message, the suggested rewrite and the evidence (tensor bytes,
 * gradient bytes, backward time, share). A click on a row selects and centres its nodes in the graph (the cause
 * first). In the diff view there is a section per side, and A's findings that B no longer has are marked resolved.
 * Built only with dom.h: every string from the graph is text, never markup.
 */
import type { Finding } from "../schema/types";
import { LEVEL_INFO, LEVEL_RESOLVED, LEVEL_WARNING, shortSource } from "../model/findings";
import { badgeColours } from "../canvas/badges";
import { formatBytes, formatCount, formatMs, formatValue } from "../model/format";
import { h, kvTable } from "./dom";
import { injectCss } from "./styles";
import css from "./findings.css";

/** One list of findings: the graph's, or one side of a diff. */
export interface FindingSection {
  /** pane index */
  side: number;
  /** section heading (the diff's pane label), or null for a single graph */
  label: string | null;
  /** null: this graph was never advised */
  findings: Finding[] | null;
  /** indices of findings gone in the other graph (diff: A's findings B no longer has) */
  resolved?: ReadonlySet<number>;
  /** what a resolved row says ("resolved in broadcast") */
  resolvedText?: string;
}

const SHARE_OF: Record<string, string> = {
  backward_ms: "of backward time", grad_bytes: "of gradient bytes", nodes: "of nodes", saved_bytes: "of saved bytes",
  op_ms: "of the op's time", step_ms: "of the step", peak_bytes: "of the memory peak",
};

const pct = (x: number) => `${(x * 100).toFixed(x >= 0.1 ? 0 : 1)}%`;
const isNum = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

/** The evidence a row shows at a glance, as [label, value, the exact number] (the rest is under "all evidence"). */
export function evidenceChips(f: Finding): [string, string, string][] {
  const ev = f.evidence;
  const out: [string, string, string][] = [];
  if (isNum(ev.bytes)) out.push(["tensor", formatBytes(ev.bytes), `bytes = ${formatCount(ev.bytes)}`]);
  if (isNum(ev.grad_bytes)) out.push(["gradients", formatBytes(ev.grad_bytes), `grad_bytes = ${formatCount(ev.grad_bytes)}`]);
  if (isNum(ev.waste_bytes)) out.push(["avoidable", `~${formatBytes(ev.waste_bytes)}`, `waste_bytes = ${formatCount(ev.waste_bytes)}`]);
  if (isNum(ev.bwd_ms)) out.push(["backward", formatMs(ev.bwd_ms), `bwd_ms = ${ev.bwd_ms}`]);
  if (isNum(ev.recompute_ms)) out.push(["recompute", formatMs(ev.recompute_ms), `recompute_ms = ${ev.recompute_ms}`]);
  if (isNum(ev.share_of_backward)) out.push(["share", `${pct(ev.share_of_backward)} of backward`, `share_of_backward = ${ev.share_of_backward}`]);
  else if (isNum(ev.share)) {
    const of = typeof ev.share_of === "string" ? SHARE_OF[ev.share_of] ?? `of ${ev.share_of}` : "";
    out.push(["share", `${pct(ev.share)} ${of}`.trim(), `share = ${ev.share}${ev.share_of ? ` (${String(ev.share_of)})` : ""}`]);
  }
  return out;
}

export class FindingsTab {
  readonly el: HTMLDivElement;
  /** per section: its rows (one per finding) */
  private rows: HTMLElement[][] = [];
  private current: [number, number] | null = null;

  constructor(private sections: FindingSection[], private onPick: (side: number, k: number) => void) {
    this.el = h("div", { class: "gw-findings" });
    this.render();
  }

  /** How many findings there are over all sections. */
  get count(): number {
    return this.sections.reduce((a, s) => a + (s.findings?.length ?? 0), 0);
  }

  /** The tab's label: "Findings (3)" when there are some. */
  label(): string {
    return this.count ? `Findings (${this.count})` : "Findings";
  }

  render(): void {
    this.rows = [];
    const parts: HTMLElement[] = [];
    for (const sec of this.sections) {
      const fs = sec.findings;
      const rows = (fs ?? []).map((f, k) => this.row(sec, f, k));
      this.rows.push(rows);
      if (sec.label !== null) parts.push(h("h4", { class: "gw-fd-side", text: sectionTitle(sec) }));
      if (fs === null) parts.push(h("p", { class: "gw-empty", text: "Not advised: no findings were computed for this graph. Call g.advise() (or gw.advise(g)) before showing or exporting it." }));
      else if (!fs.length) parts.push(h("p", { class: "gw-empty", text: "The advisor found nothing to report." }));
      else {
        if (sec.label === null) parts.push(h("p", { class: "gw-note", text: `${summary(fs)} · click one to see its nodes (the cause first)` }));
        parts.push(h("ol", { class: "gw-fd-list" }, ...rows));
      }
    }
    this.el.replaceChildren(...parts);
  }

  private row(sec: FindingSection, f: Finding, k: number): HTMLElement {
    const resolved = !!sec.resolved?.has(k);
    const pick = () => this.onPick(sec.side, k);
    const head = h("div", { class: "gw-fd-head" },
      h("span", { class: `gw-fd-sev gw-fd-${f.severity}`, text: f.severity }),
      resolved ? h("span", { class: "gw-fd-sev gw-fd-resolved", text: sec.resolvedText ?? "resolved" }) : null,
      h("span", { class: "gw-fd-rule", text: f.rule }),
      h("span", { class: "gw-fd-src", text: shortSource(f.source), title: f.source ?? "no source line" }));
    const ev = evidenceChips(f);
    const nodes = f.nodes.length;
    const chips = h("div", { class: "gw-fd-ev" },
      ...ev.map(([label, value, exact]) => h("span", { class: "gw-fd-chip", title: exact }, h("span", { class: "gw-fd-chip-k", text: label }), ` ${value}`)),
      h("span", { class: "gw-fd-chip", title: `node ids: ${f.nodes.join(", ")}` }, h("span", { class: "gw-fd-chip-k", text: "nodes" }), ` ${formatCount(nodes)}`));
    const keys = Object.keys(f.evidence);
    const all = keys.length ? h("details", { class: "gw-fd-more", on: { click: (e) => e.stopPropagation() } },
      h("summary", { text: "all evidence" }),
      kvTable(keys.map((key) => [key, formatValue(f.evidence[key], 400)]))) : null;
    return h("li", {
      class: `gw-fd-row gw-fd-row-${f.severity}${resolved ? " gw-fd-row-resolved" : ""}`,
      attrs: { role: "button", tabindex: "0", "data-side": String(sec.side), "data-finding": String(k), "data-rule": f.rule },
      on: {
        click: pick,
        keydown: (e) => { const key = (e as KeyboardEvent).key; if (key === "Enter" || key === " ") { e.preventDefault(); pick(); } },
      },
    },
    head,
    f.module ? h("div", { class: "gw-fd-module", text: `in ${f.module}`, title: "nn.Module path" }) : null,
    f.code ? h("pre", { class: "gw-code gw-fd-code", text: f.code, title: "the forward line" }) : null,
    h("p", { class: "gw-fd-msg", text: f.message }),
    f.suggestion ? h("div", { class: "gw-fd-fix" }, h("span", { class: "gw-fd-fix-k", text: "rewrite" }), h("pre", { class: "gw-code", text: f.suggestion })) : null,
    chips,
    all);
  }

  /** Marks the rows of a side that name its selected node (by id), or clears that side's marks (null). */
  setSelected(side: number, id: number | null): void {
    this.sections.forEach((sec, s) => {
      if (sec.side !== side) return;
      (sec.findings ?? []).forEach((f, k) => {
        const row = this.rows[s]?.[k];
        if (row) row.classList.toggle("gw-fd-has", id !== null && f.nodes.includes(id));
      });
    });
  }

  /** The row last picked (outlined). */
  setCurrent(side: number, k: number | null): void {
    this.current = k === null ? null : [side, k];
    this.sections.forEach((sec, s) => this.rows[s]?.forEach((row, j) => row.classList.toggle("gw-sel", !!this.current && sec.side === side && j === k)));
  }

  /** The tab as text, a line per part of each row (for the automation API). */
  text(): string {
    const lines: string[] = [];
    for (const el of this.el.children) {
      if (el.tagName === "OL") for (const li of el.children) lines.push(rowText(li as HTMLElement));
      else lines.push(el.textContent ?? "");
    }
    return lines.join("\n");
  }
}

function rowText(li: HTMLElement): string {
  const parts: string[] = [];
  for (const c of li.children) {
    if (c.tagName === "DETAILS") continue;
    if (c.classList.contains("gw-fd-head") || c.classList.contains("gw-fd-ev")) parts.push(Array.from(c.children, (x) => x.textContent ?? "").join("  "));
    else parts.push(c.textContent ?? "");
  }
  return parts.join("\n");
}

function summary(fs: Finding[]): string {
  const w = fs.filter((f) => f.severity === "warning").length, i = fs.length - w;
  return [w ? `${w} warning${w > 1 ? "s" : ""}` : "", i ? `${i} info` : ""].filter(Boolean).join(", ");
}

function sectionTitle(sec: FindingSection): string {
  const fs = sec.findings;
  if (fs === null) return `${sec.label}: not advised`;
  const r = sec.resolved?.size ?? 0;
  return `${sec.label}: ${fs.length ? summary(fs) : "no findings"}${r ? ` · ${r} resolved` : ""}`;
}

/**
 * The legend's line for the badges: one swatch per level present (`levels`: LEVEL_* codes), in the colours the
 * canvas draws them with (`dark`: the pane's theme).
 */
export function findingsLegend(levels: ReadonlySet<number>, dark: boolean, resolvedText = "resolved"): HTMLElement | null {
  const items: [number, string, string][] = [[LEVEL_WARNING, "!", "finding (warning)"], [LEVEL_INFO, "i", "finding (info)"], [LEVEL_RESOLVED, "✓", resolvedText]];
  const shown = items.filter(([l]) => levels.has(l));
  if (!shown.length) return null;
  return h("div", { class: "gw-legend-findings", title: "Badges: nodes the advisor names (see the Findings tab); on a group, how many findings are inside" },
    ...shown.map(([level, sym, text]) => {
      const sw = h("span", { class: "gw-fd-swatch", text: sym });
      const c = badgeColours(level, dark);
      sw.style.background = c.fill;
      sw.style.color = c.text;
      return h("span", { class: "gw-st-item" }, sw, text);
    }));
}

const STYLE_ID = "graphwidget-findings-style";

/** The tab's stylesheet, applied once per document or shadow root, the way ui/styles.ts applies the view's (a
 * constructed stylesheet where the browser has them, so a strict CSP without inline styles still styles the tab). */
export function injectFindingStyles(el: HTMLElement): void {
  injectCss(el, STYLE_ID, css);
}
