/**
 * Automation API of the diff view on the root element (`el.graphwidget`), for tests, notebooks and pages embedding
 * the export. Sides are "a" and "b". Documented in docs/viewer.md.
 */
import type { DiffApp } from "./app";
import type { Side, StatusName } from "./model";
import type { ChangesBy } from "./changes";
import { labelStatsOf, outsideOf, type FindingSummary, type LabelStats } from "../ui/api";
import { paneItemId, panesApi, type PanesApi } from "../ui/panes-api";

export type SideName = "a" | "b";

export interface DiffWidgetApi extends PanesApi<SideName> {
  readonly kind: "diff";
  /** resolves when both panes are drawn */
  ready: Promise<void>;
  /** resolves when the latest layouts of both panes are drawn */
  idle(): Promise<void>;
  readonly error: string | null;
  /** the two pane titles, A then B */
  panes(): [string, string];
  /** selects a node on a side (opening its groups) and centres it and its counterpart; null clears */
  select(id: number | null, side: SideName): Promise<boolean>;
  selected(side: SideName): number | null;
  status(id: number, side: SideName): StatusName | null;
  summaryText(): string;
  changesText(by?: ChangesBy): string;
  /** shows the Changes tab grouped by op or by source */
  showChanges(by: ChangesBy): void;
  /** clicks row k of the Changes table (as currently grouped) */
  pickChange(k: number): Promise<void>;
  nodeCount(side: SideName): number;
  /** the advisor's findings of a side, `{rule, severity, nodes, source, resolved}`; resolved: gone in B (A only) */
  findings(side: SideName): (FindingSummary & { resolved: boolean })[];
  /** picks finding i of a side in the Findings tab: outlines its nodes, selects and centres its cause and the
   * cause's counterpart; resolves to the cause's id */
  selectFinding(i: number, side: SideName): Promise<number | null>;
  findingsText(): string;
  /** a side's status badges drawn in the last frame: `{id, status, label, x, y, w, h}`, the label its symbol (Δ + −)
   * or a group's count, the centre and size in viewport CSS pixels */
  statusBadges(side: SideName): { id: number | string; status: string; label: string; x: number; y: number; w: number; h: number }[];
  /** a side's drawn items on screen in the last frame and how many carry a legible label */
  labelStats(side: SideName): LabelStats;
  /** ids of a side's drawn items and open groups not wholly inside its pane */
  outside(side: SideName): (number | string)[];
  /** whether the side panel is shown, and where: "side" (beside the panes) or "below" (under them) */
  panel(): "side" | "below" | "hidden";
  readonly timings: Record<string, number | string>;
}

function sideOf(s: unknown): Side {
  if (s === "a" || s === "A" || s === 0) return 0;
  if (s === "b" || s === "B" || s === 1) return 1;
  throw new Error(`side must be "a" or "b", got ${JSON.stringify(s)}`);
}

export function attachDiffApi(app: DiffApp): DiffWidgetApi {
  const pane = (s: SideName) => app.panes[sideOf(s)] ?? null;
  const api: DiffWidgetApi = {
    ...panesApi<SideName>(app, sideOf),
    kind: "diff",
    ready: app.ready,
    idle: async () => { await app.ready; await Promise.all(app.panes.map((p) => p.idle())); await app.pairDone; },
    get error() { return app.error; },
    panes: () => (app.doc ? [app.doc.labels[0], app.doc.labels[1]] : ["", ""]),
    select: (id, s) => app.selectOn(sideOf(s), id, true, false),
    selected: (s) => app.selectedOn(sideOf(s)),
    status: (id, s) => app.diff?.statusOf(sideOf(s), id) ?? null,
    summaryText: () => app.summaryText,
    changesText: (by) => app.changes?.text(by) ?? "",
    showChanges: (by) => { app.changes?.show(by); app.root.querySelector<HTMLElement>(".gw-tab[data-tab=changes]")?.click(); },
    pickChange: async (k) => {
      const row = app.changes?.rows()[k];
      if (!row) throw new Error(`no Changes row ${k}`);
      await app.pickRow(row);
    },
    nodeCount: (s) => pane(s)?.view?.items.length ?? 0,
    findings: (s) => {
      const k = sideOf(s);
      const fs = (k === 0 ? app.findings.a : app.findings.b) ?? [];
      return fs.map((f, i) => ({ rule: f.rule, severity: f.severity, nodes: [...f.nodes], source: f.source, resolved: k === 0 && app.findings.resolved.has(i) }));
    },
    selectFinding: async (i, s) => {
      const id = await app.selectFinding(i, sideOf(s));
      await app.pairDone;
      return id;
    },
    findingsText: () => app.findingsText(),
    statusBadges: (s) => {
      const k = sideOf(s), p = app.panes[k], v = p?.view;
      if (!p || !v) return [];
      const r = p.canvas.getBoundingClientRect();
      const names: Record<number, string> = { 2: "changed", 3: "added", 4: "removed" };
      return p.statusBadges.map((b) => {
        return { id: paneItemId(app, k, b.item), status: names[b.code] ?? "changed",
          label: b.label, x: r.left + b.x, y: r.top + b.y, w: b.w, h: b.h };
      });
    },
    labelStats: (s) => labelStatsOf(pane(s)),
    outside: (s) => { const k = sideOf(s); return outsideOf(app.panes[k], (j) => paneItemId(app, k, j)); },
    panel: () => {
      const side = app.root.querySelector<HTMLElement>(".gw-side");
      if (!side || side.hidden) return "hidden";
      const b = app.root.querySelector<HTMLElement>(".gw-body");
      return b && getComputedStyle(b).flexDirection === "column" ? "below" : "side";
    },
    get timings() {
      const [a, b] = app.panes;
      return { decode: app.timings.decode, total: app.timings.total, layout_a: a?.timings.layout ?? 0, layout_b: b?.timings.layout ?? 0,
        draw_a: a?.timings.draw ?? 0, draw_b: b?.timings.draw ?? 0, algorithm: `${a?.timings.algorithm ?? ""}/${b?.timings.algorithm ?? ""}`, worker: a?.timings.worker ?? "" };
    },
  };
  (app.root as HTMLElement & { graphwidget?: DiffWidgetApi }).graphwidget = api;
  return api;
}
