/**
 * The part of the automation API that the views of several panes share (the diff view's `diff/api.ts`, the N-way
 * view's `nway/api.ts`): everything that reads or drives one pane, named the way the view names its panes (`K`:
 * "a" / "b", or an index or a label), and the view-wide controls (sync, colour, groups, fit). Documented in
 * docs/viewer.md.
 */
import type { App } from "./app";
import type { CameraState } from "../canvas/camera";
import { isMetricName, METRIC_ORDER, type MetricName } from "../model/colour";
import { badgesOf, itemRectsOf, labelTextOf, type BadgeInfo, type ItemRect } from "./api";

/** A view of several panes: the graph view's App with pan and zoom kept in step on request. */
export type PanesApp = App & { syncOn: boolean; setSync(on: boolean, user?: boolean): void };

export interface PanesApi<K> {
  inspectorText(): string;
  /** outlines the matches in every pane; how many there are */
  search(query: string): number;
  graphNodeCount(pane: K): number;
  visibleNodeIds(pane: K): number[];
  /** ids of the outlined nodes and groups of a pane (search matches, picked nodes) */
  highlightedIds(pane: K): (number | string)[];
  nodeScreenPosition(id: number | string, pane: K): { x: number; y: number } | null;
  /** a pane's drawn nodes and closed groups at least partly on screen (id: node id or group id), in viewport CSS
   * pixels */
  itemRects(pane: K): ItemRect[];
  centre(id: number | string, pane: K): boolean;
  /** the op label the last frame drew on node id's box (whole, or cut with "…"); null when it drew none */
  labelText(id: number, pane: K): string | null;
  camera(pane: K): CameraState | null;
  /** the fill colour a node or group is drawn with (one scale for every pane: equal values, equal colours) */
  nodeColour(id: number | string, pane: K): string | null;
  sync(): boolean;
  setSync(on: boolean): void;
  colourBy(metric: MetricName): void;
  colour(): MetricName;
  legendText(): string;
  expandAll(): Promise<void>;
  collapseAll(): Promise<void>;
  fit(): void;
  findingBadges(pane: K): BadgeInfo[];
  /** the view as SVG text, as the toolbar's Save… → SVG saves it (every pane, the strips around them, the legend) */
  toSVG(): string;
}

/** The id pane `k`'s drawn item `j` stands for: its group's id when it is a closed group, else its node's id. */
export function paneItemId(app: App, k: number, j: number): number | string {
  const it = app.panes[k].view!.items[j];
  return it.cluster ? it.cluster.id : app.models[k].nodes[it.node].id;
}

/** The methods of {@link PanesApi} for `app`, whose panes `index` turns a pane name into (throwing on a bad one). */
export function panesApi<K>(app: PanesApp, index: (pane: K) => number): PanesApi<K> {
  const pane = (p: K) => app.panes[index(p)] ?? null;
  const itemOf = (id: number | string, p: K): number => {
    const k = index(p), v = app.panes[k]?.view;
    if (!v) return -1;
    if (typeof id === "string") return v.itemOfCluster.get(id) ?? -1;
    const i = app.models[k].indexOf.get(id);
    return i === undefined ? -1 : v.rep[i];
  };
  return {
    inspectorText: () => {
      const el = app.root.querySelector<HTMLElement>(".gw-tab-inspector");
      return el ? (el.hidden ? el.textContent ?? "" : el.innerText) : "";
    },
    search: (q) => app.search(q),
    graphNodeCount: (p) => app.models[index(p)]?.n ?? 0,
    visibleNodeIds: (p) => {
      const k = index(p);
      return (app.panes[k]?.view?.items ?? []).filter((it) => it.node >= 0).map((it) => app.models[k].nodes[it.node].id);
    },
    highlightedIds: (p) => {
      const k = index(p), v = app.panes[k]?.view, mask = app.matchMask(k);
      if (!v || !mask) return [];
      const hit = new Uint8Array(v.items.length);
      for (let i = 0; i < mask.length; i++) if (mask[i]) hit[v.rep[i]] = 1;
      const out: (number | string)[] = [];
      v.items.forEach((_, j) => { if (hit[j]) out.push(paneItemId(app, k, j)); });
      return out;
    },
    nodeScreenPosition: (id, p) => pane(p)?.viewport.itemClientPosition(itemOf(id, p)) ?? null,
    itemRects: (p) => { const k = index(p); return itemRectsOf(app.panes[k], (j) => paneItemId(app, k, j)); },
    centre: (id, p) => {
      const i = itemOf(id, p), q = pane(p);
      if (i < 0 || !q) return false;
      q.viewport.centreItem(i);
      q.drawNow();
      return true;
    },
    labelText: (id, p) => labelTextOf(pane(p), itemOf(id, p)),
    camera: (p) => pane(p)?.camera.state ?? null,
    nodeColour: (id, p) => { const q = pane(p); return q ? q.colours.itemColour(itemOf(id, p), q.surface.theme.dark) : null; },
    sync: () => app.syncOn,
    setSync: (on) => app.setSync(!!on, false),
    colourBy: (m) => {
      if (!isMetricName(m)) throw new Error(`unknown colour metric ${JSON.stringify(m)}; use ${METRIC_ORDER.join(", ")}`);
      app.colourBy(m, false);
    },
    colour: () => app.metric,
    legendText: () => app.root.querySelector(".gw-legend")?.textContent ?? "",
    expandAll: () => app.expandAll(),
    collapseAll: () => app.collapseAll(),
    fit: () => { app.fitAll(); app.panes.forEach((p) => p.drawNow()); },
    toSVG: () => app.toSVG(),
    findingBadges: (p) => badgesOf(pane(p)),
  };
}
