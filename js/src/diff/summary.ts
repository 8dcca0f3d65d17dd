/**
 * The summary strip above the two panes. It leads with Python's one-line verdict ("broadcast vs repeat: same maths
 * (float32 rounding); whole step 3.1× faster [2.6–3.7]; ..."), then per total (nodes, edges, saved bytes, gradient
 * bytes, forward, backward and whole-step time) A → B with the delta and the ratio; the speed verdict with its
 * interval when measured; the equivalence verdict, a loud red banner when A and B do not compute the same thing.
 * Node and edge counts are never coloured as better or worse: counts mislead, sizes and times tell. Built with dom.h
 * (text, never markup).
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
  { key: "step_ms", label: "whole step", format: formatMs },
];

/** Totals whose change is neither good nor bad by itself. */
const NEUTRAL = new Set<TotalKey>(["nodes", "edges"]);

/** What the one ratio shown for times is (the one the verdict uses): said on hover. */
const RATIO_TITLE = "B/A: the median over interleaved rounds of B's time divided by A's in the same round, from plain " +
  "runs without per-node hooks; the brackets are its 95 % interval (distribution-free, of the median; docs/diff.md).";

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
  const cls = delta === null || delta === 0 || NEUTRAL.has(d.key) ? "gw-same" : delta < 0 ? "gw-less" : "gw-more";
  const iv = s.interval[d.key];
  // a measured ratio is never shown without its interval
  const shown = delta === 0 ? "" : formatRatio(ratio) + (iv ? ` [${formatRatio(iv[0]).slice(1)}–${formatRatio(iv[1]).slice(1)}]` : "");
  return { a: a === null ? "—" : d.format(a), b: b === null ? "—" : d.format(b), delta: delta === null ? "" : signed(delta, d.format),
    ratio: shown, cls };
}

/** The speed verdict: "whole step B/A ×0.31 [0.28–0.35], 20 rounds (cpu): broadcast faster" (older documents:
 * "backward B/A ..."). */
function timingText(s: DiffSummary): { label: string; text: string } | null {
  const t = s.timing;
  if (!t || t.ratio === null) return null;
  const interval = t.low !== null && t.high !== null ? ` [${formatRatio(t.low).slice(1)}–${formatRatio(t.high).slice(1)}]` : "";
  const label = t.clock ? "whole step B/A" : "backward B/A";
  const runs = t.runs !== null ? `, ${t.runs} ${t.clock ? "rounds" : "runs"}` : "";
  const clock = t.clock ? ` (${t.clock})` : "";
  return { label, text: `${formatRatio(t.ratio)}${interval}${runs}${clock}${t.verdict ? `: ${t.verdict}` : ""}` };
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
    const details = bad.map((t) => t.note ? `${t.name}: ${t.note}` :
      `${t.name}: max abs diff ${sci(t.max_abs)}, max rel diff ${sci(t.max_rel)}` +
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
    const attrs: Record<string, string> = { "data-key": d.key };
    if (d.key.endsWith("_ms") && s.timing?.clock) attrs.title = RATIO_TITLE;
    cells.push(h("div", { class: "gw-sum-cell", attrs },
      h("div", { class: "gw-sum-label", text: d.label }),
      h("div", { class: "gw-sum-values" }, h("span", { text: t.a }), h("span", { class: "gw-sum-arrow", text: " → " }), h("span", { text: t.b })),
      t.delta ? h("div", { class: `gw-sum-delta ${t.cls}`, text: `${t.delta}${t.ratio ? `  ${t.ratio}` : ""}` }) : null));
  }
  const timing = timingText(s);
  if (timing) {
    lines.push(`${timing.label} ${timing.text}`);
    cells.push(h("div", { class: "gw-sum-cell gw-sum-timing", attrs: { "data-key": "timing", title: RATIO_TITLE } },
      h("div", { class: "gw-sum-label", text: `${timing.label} (measured)` }), h("div", { class: "gw-sum-values", text: timing.text })));
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
  if (s.sentence) {
    // the answer first: the line a reviewer pastes into a pull request; its toggle folds the numbers below it
    lines.unshift(s.sentence);
    const toggle = h("button", { class: "gw-sum-toggle", attrs: { type: "button", "data-action": "summary", "aria-expanded": "true" },
      on: { click: () => foldSummary(el, !el.classList.contains("gw-sum-folded"), true) } });
    parts.unshift(h("div", { class: "gw-sum-head" },
      h("div", { class: `gw-diff-sentence${eq?.equivalent === false ? " gw-bad-text" : ""}`, attrs: { "data-key": "sentence" }, text: s.sentence }),
      toggle));
  }
  el.replaceChildren(...parts);
  foldSummary(el, el.classList.contains("gw-sum-folded"), false);
  return lines.join("\n");
}

/**
 * Folds the strip to its sentence (the numbers hidden; a NOT EQUIVALENT banner always stays) or unfolds it. Only a
 * strip that leads with a sentence folds: the numbers are the answer otherwise. `user`: the toggle was clicked,
 * and that choice holds (fitSummary leaves it alone).
 */
export function foldSummary(el: HTMLElement, folded: boolean, user: boolean): void {
  const toggle = el.querySelector<HTMLElement>(".gw-sum-toggle");
  if (!toggle) folded = false;
  el.classList.toggle("gw-sum-folded", folded);
  if (user) el.dataset.chosen = "1";
  if (toggle) {
    toggle.textContent = folded ? "numbers ▸" : "▾";
    toggle.title = folded ? "Show the numbers behind the sentence" : "Fold the numbers (the sentence stays)";
    toggle.setAttribute("aria-expanded", String(!folded));
  }
}

/**
 * Folds the strip when, unfolded, it would take more than `share` of the view's height (a notebook output of
 * 600 px at 570 px wide: the numbers wrap into rows and the panes keep a third), unless the user chose.
 */
export function fitSummary(el: HTMLElement, viewHeight: number, share = 0.25): void {
  if (el.dataset.chosen || viewHeight <= 0) return;
  foldSummary(el, false, false);
  if (el.offsetHeight > share * viewHeight) foldSummary(el, true, false);
}
