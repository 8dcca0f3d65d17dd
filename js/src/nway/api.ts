/**
 * Automation API of the N-way view on the root element (`el.graphwidget`, `kind: "nway"`), for tests, notebooks
 * and pages embedding the export. A pane is named by its index (0: the reference) or its label. Documented in
 * docs/viewer.md.
 */
import type { NWayApp } from "./app";
import { panesApi, type PanesApi } from "../ui/panes-api";

export type PaneRef = number | string;

export interface NWayWidgetApi extends PanesApi<PaneRef> {
  readonly kind: "nway";
  /** resolves when every pane is drawn */
  ready: Promise<void>;
  /** resolves when the latest layouts of every pane are drawn and every pane followed the latest selection */
  idle(): Promise<void>;
  readonly error: string | null;
  /** the pane labels, the reference first */
  panes(): string[];
  /** each pane's header as text (label, verdict, badges) */
  headerText(pane: PaneRef): string;
  /** the badges on a pane's header: "straggler", "divergent" */
  paneBadges(pane: PaneRef): string[];
  /** each pane's canvas rectangle, in viewport CSS pixels */
  paneRects(): { left: number; top: number; width: number; height: number }[];
  /** selects node id in a pane (opening its groups) and centres it and its counterparts in every pane; null clears */
  select(id: number | null, pane?: PaneRef): Promise<boolean>;
  selected(pane: PaneRef): number | null;
  /** the selected node in every pane (null where none) */
  selectedAll(): (number | null)[];
  /** node id of a pane in every pane, through the reference (null where none; a fused node's region) */
  counterparts(id: number, pane: PaneRef): (number | null)[];
  status(id: number, pane: PaneRef): string | null;
  readonly timings: Record<string, number | string>;
}

export function attachNWayApi(app: NWayApp): NWayWidgetApi {
  const paneOf = (p: PaneRef | undefined): number => {
    if (p === undefined) return 0;
    const labels = app.doc?.labels ?? [];
    const k = typeof p === "number" ? p : labels.indexOf(p);
    if (!Number.isInteger(k) || k < 0 || k >= Math.max(labels.length, app.panes.length)) {
      throw new Error(`no pane ${JSON.stringify(p)}: use 0 to ${labels.length - 1} or one of ${JSON.stringify(labels)}`);
    }
    return k;
  };
  const pane = (p: PaneRef) => app.panes[paneOf(p)] ?? null;
  const title = (p: PaneRef) => pane(p)?.el.querySelector<HTMLElement>(".gw-pane-title") ?? null;
  const api: NWayWidgetApi = {
    ...panesApi<PaneRef>(app, paneOf),
    kind: "nway",
    ready: app.ready,
    idle: async () => { await app.ready; await Promise.all(app.panes.map((p) => p.idle())); await app.followDone; },
    get error() { return app.error; },
    panes: () => [...(app.doc?.labels ?? [])],
    headerText: (p) => {
      const t = title(p);
      return t ? [...t.children].map((c) => c.textContent ?? "").join("\n") : "";
    },
    paneBadges: (p) => [...(title(p)?.querySelectorAll<HTMLElement>("[data-badge]") ?? [])].map((b) => b.getAttribute("data-badge")!),
    paneRects: () => app.panes.map((p) => { const r = p.el.getBoundingClientRect(); return { left: r.left, top: r.top, width: r.width, height: r.height }; }),
    select: (id, p) => app.selectOn(paneOf(p), id, true, false),
    selected: (p) => app.selectedOn(paneOf(p)),
    selectedAll: () => app.panes.map((_, k) => app.selectedOn(k)),
    counterparts: (id, p) => {
      const k = paneOf(p), m = app.nway, i = app.models[k]?.indexOf.get(Number(id));
      if (!m || i === undefined) throw new Error(`pane ${JSON.stringify(p)} has no node ${JSON.stringify(id)}`);
      return m.counterparts(k, i).map((c, j) => m.idOf(j, c.node));
    },
    status: (id, p) => app.statusOf(paneOf(p), id),
    get timings() {
      const ps = app.panes;
      return { decode: app.timings.decode, total: app.timings.total, layout: Math.max(0, ...ps.map((p) => p.timings.layout)),
        draw: Math.max(0, ...ps.map((p) => p.timings.draw)), algorithm: ps.map((p) => p.timings.algorithm).join("/"), worker: ps[0]?.timings.worker ?? "" };
    },
  };
  (app.root as HTMLElement & { graphwidget?: NWayWidgetApi }).graphwidget = api;
  return api;
}
