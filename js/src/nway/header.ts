/**
 * Each pane's header: the side's label, its verdict against the reference as Python wrote it in the table (same
 * maths?, the whole step's speed with its interval, nodes only here / only in the reference, compiled regions),
 * and for ranks the straggler and divergence badges. Built only with dom.h (every label is text).
 */
import { formatCount, formatMs } from "../model/format";
import { h } from "../ui/dom";
import type { TableRow } from "./doc";
import type { RankTimes } from "./ranks";

/** The verdict line of a side against the reference ("same maths (float32 rounding) · 1.9× faster [1.7–2.1]"). */
export function verdictText(row: TableRow, kind: "sides" | "ranks", refLabel: string): string {
  if (row.reference) return kind === "ranks" ? "reference rank" : "reference";
  const parts: string[] = [];
  if (row.maths) parts.push(row.maths);
  if (row.step?.text) parts.push(`step ${row.step.text}`);
  else if (row.backward?.text) parts.push(`backward ${row.backward.text}`);
  const only = row.added ?? 0, missing = row.removed ?? 0, changed = row.changed ?? 0;
  if (row.fused && row.fused.regions) parts.push(`${row.fused.regions} compiled region${row.fused.regions === 1 ? "" : "s"} covering ${formatCount(row.fused.covers)} nodes`);
  else if (missing) parts.push(`${formatCount(missing)} only in ${refLabel}`);
  if (only) parts.push(`${formatCount(only)} only here`);
  if (changed) parts.push(`${formatCount(changed)} changed`);
  if (!parts.length) parts.push(kind === "ranks" ? "same graph as the reference" : "same graph");
  return parts.join(" · ");
}

/** Fills a pane's title element: label, verdict, badges. */
export function renderHeader(title: HTMLElement, label: string, row: TableRow, kind: "sides" | "ranks", refLabel: string,
  k: number, ranks: RankTimes | null): void {
  const verdict = verdictText(row, kind, refLabel);
  const bad = row.equivalent === false;
  const badges = ranks ? ranks.badges(k, formatMs) : [];
  title.replaceChildren(
    h("span", { class: "gw-nway-label", text: label }),
    ...badges.map((b) => h("span", { class: `gw-nway-badge gw-nway-badge-${b.kind}`, text: b.text, title: b.title, attrs: { "data-badge": b.kind } })),
    h("div", { class: `gw-nway-verdict${bad ? " gw-bad-text" : ""}${row.reference ? " gw-nway-refverdict" : ""}`, text: verdict }),
  );
  title.title = `${label}: ${verdict}${badges.map((b) => `\n${b.text}: ${b.title}`).join("")}`;
  title.setAttribute("data-pane", String(k));
}
