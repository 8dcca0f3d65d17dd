/**
 * The summary strip above the two panes: per total (nodes, edges, saved bytes, gradient bytes, forward and backward
 * time) A → B with the delta and the ratio; the timing interval when measured; the equivalence verdict, a loud red
 * banner when A and B do not compute the same thing. Built with dom.h (text, never markup).
 */
import { h } from "../ui/dom";
import { formatBytes, formatCount, formatMs, formatShape } from "../model/format";
import type { DiffDoc, DiffSummary, TotalKey } from "../schema/diff";
import { diffFindings } from "./decode";

interface TotalDef { key: TotalKey; label: string; format(v: number): string; }

const TOTALS: TotalDef[] = [
  { key: "nodes", label: "nodes", format: formatCount },
  { key: "edges", label: "edges", format: formatCount },
  { key: "saved_bytes", label: "saved", format: formatBytes },
  { key: "grad_bytes", label: "gradient written", format: formatBytes },
  { key: "forward_ms", label: "forward", format: formatMs },
  { key: "backward_ms", label: "backward", format: formatMs },
];

function signed(v: number, format: (v: number) => string): string {
  if (v === 0) return "±0";
  return v > 0 ? `+${format(v)}` : `−${format(-v)}`;
}

/** "×0.31": two significant digits, more near 1 (1.04, 0.997: a change never reads "×1"), none past 100. */
export function formatRatio(r: number | null): string {
  if (r === null || !Number.isFinite(r)) return "";
  if (Math.abs(r) >= 100) return `×${Math.round(r)}`;
  const near = Math.abs(r - 1);
  const digits = near === 0 ? 1 : Math.min(6, 2 + Math.max(0, Math.ceil(-Math.log10(near))));
  return `×${Number(r.toPrecision(digits))}`;
}

/** One total as text: "saved: A 1.20 MiB → B 2.40 MiB (+1.20 MiB, ×2)". */
function totalText(s: DiffSummary, d: TotalDef): { a: string; b: string; delta: string; ratio: string; cls: string } | null {
  const a = s.a[d.key], b = s.b[d.key];
  if (a === null && b === null) return null;
  const delta = s.delta[d.key] ?? (a !== null && b !== null ? b - a : null);
  const ratio = s.ratio[d.key] ?? (a !== null && b !== null && a !== 0 ? b / a : null);
  const cls = delta === null || delta === 0 ? "gw-same" : delta < 0 ? "gw-less" : "gw-more";
  return { a: a === null ? "—" : d.format(a), b: b === null ? "—" : d.format(b), delta: delta === null ? "" : signed(delta, d.format),
    ratio: delta === 0 ? "" : formatRatio(ratio), cls };
}

function timingText(s: DiffSummary): string | null {
  const t = s.timing;
  if (!t || t.ratio === null) return null;
  const interval = t.low !== null && t.high !== null ? ` [${formatRatio(t.low).slice(1)}–${formatRatio(t.high).slice(1)}]` : "";
  const runs = t.runs !== null ? `, ${t.runs} runs` : "";
  return `backward B/A ${formatRatio(t.ratio)}${interval}${runs}${t.verdict ? `: ${t.verdict}` : ""}`;
}

function sci(v: number | null): string {
  return v === null ? "—" : v === 0 ? "0" : Math.abs(v) >= 1e-3 && Math.abs(v) < 1e4 ? String(+v.toPrecision(3)) : v.toExponential(2);
}

/** Draws the strip into `el`; returns its text, one line per item (what the automation API's summaryText gives). */
export function renderSummary(el: HTMLElement, doc: DiffDoc): string {
  const s = doc.summary;
  const [la, lb] = doc.labels;
  const lines: string[] = [];
  const parts: HTMLElement[] = [];
  const eq = s.equivalence;
  if (eq && eq.equivalent === false) {
    const bad = eq.tensors.filter((t) => t.allclose === false);
    const head = `NOT EQUIVALENT: ${lb} does not compute the same values as ${la}`;
    const details = bad.map((t) => `${t.name}: max abs diff ${sci(t.max_abs)}, max rel diff ${sci(t.max_rel)}` +
      (formatShape(t.shape_a) !== formatShape(t.shape_b) ? `, shape ${formatShape(t.shape_a)} vs ${formatShape(t.shape_b)}` : ""));
    lines.push(head, ...details);
    parts.push(h("div", { class: "gw-diff-banner gw-bad", attrs: { role: "alert" } },
      h("strong", { text: head }), ...details.map((d) => h("div", { text: d }))));
  }
  const cells: HTMLElement[] = [];
  for (const d of TOTALS) {
    const t = totalText(s, d);
    if (!t) continue;
    lines.push(`${d.label}: ${la} ${t.a} → ${lb} ${t.b}${t.delta ? ` (${t.delta}${t.ratio ? `, ${t.ratio}` : ""})` : ""}`);
    cells.push(h("div", { class: "gw-sum-cell", attrs: { "data-key": d.key } },
      h("div", { class: "gw-sum-label", text: d.label }),
      h("div", { class: "gw-sum-values" }, h("span", { text: t.a }), h("span", { class: "gw-sum-arrow", text: " → " }), h("span", { text: t.b })),
      t.delta ? h("div", { class: `gw-sum-delta ${t.cls}`, text: `${t.delta}${t.ratio ? `  ${t.ratio}` : ""}` }) : null));
  }
  const timing = timingText(s);
  if (timing) {
    lines.push(timing);
    cells.push(h("div", { class: "gw-sum-cell gw-sum-timing", attrs: { "data-key": "timing" } },
      h("div", { class: "gw-sum-label", text: "backward B/A (measured)" }), h("div", { class: "gw-sum-values", text: timing.replace(/^backward B\/A /, "") })));
  }
  if (eq && eq.equivalent === true) {
    const n = eq.tensors.length;
    const what = n ? `${n} tensor${n === 1 ? "" : "s"} allclose` : "same results";
    lines.push(`equivalent: ${what}`);
    cells.push(h("div", { class: "gw-sum-cell gw-good", attrs: { "data-key": "equivalence" } },
      h("div", { class: "gw-sum-label", text: "equivalence" }), h("div", { text: `✓ ${what}` })));
  }
  const f = diffFindings(doc);
  if (f.a !== null || f.b !== null) {
    // the advisor's findings: how many on each side ("—" for a side never advised) and how many of A's B fixed
    const a = f.a === null ? "—" : String(f.a.length), b = f.b === null ? "—" : String(f.b.length);
    const fixed = f.resolved.size ? `${f.resolved.size} resolved` : "";
    lines.push(`findings: ${la} ${a} → ${lb} ${b}${fixed ? ` (${fixed})` : ""}`);
    cells.push(h("div", { class: "gw-sum-cell", attrs: { "data-key": "findings", title: "The advisor's findings (Findings tab)" } },
      h("div", { class: "gw-sum-label", text: "findings" }),
      h("div", { class: "gw-sum-values" }, h("span", { text: a }), h("span", { class: "gw-sum-arrow", text: " → " }), h("span", { text: b })),
      fixed ? h("div", { class: "gw-sum-delta gw-less", text: fixed }) : null));
  }
  parts.push(h("div", { class: "gw-sum-cells" }, ...cells));
  el.replaceChildren(...parts);
  return lines.join("\n");
}
