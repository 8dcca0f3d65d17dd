/**
 * Automation API on the root element (`el.graphwidget`), for tests, notebooks driving the view from JS, and
 * anyone embedding the export. Documented in docs/viewer.md.
 */
import type { App } from "./app";
import { isMetricName, METRIC_ORDER, type MetricName } from "../model/colour";
import { LEVEL_INFO, LEVEL_RESOLVED, LEVEL_WARNING } from "../model/findings";
import type { GraphPane } from "../canvas/pane";

/** A finding as the automation API lists it (the same values as Python's `graph.findings`). */
export interface FindingSummary { rule: string; severity: string; nodes: number[]; source: string | null; }

/** A finding badge as drawn in the last frame: on a node (its id) or a group (its id string), in viewport CSS px. */
export interface BadgeInfo { id: number | string; severity: "warning" | "info" | "resolved"; label: string; x: number; y: number; }

/** What the first view is judged by: how many drawn items are on screen, how many carry a legible label. */
export interface LabelStats {
  /** drawn items (nodes and closed groups) at least partly on screen in the last frame */
  items: number;
  /** of those, the ones whose label was drawn at a legible size (9 px or more on screen) */
  labelled: number;
  /** every label drawn (items and frame titles), and how many of them legibly */
  labels: number;
  legible: number;
  /** the zoom: world units to screen pixels */
  scale: number;
  /** group labels drawn beside their box (zoomed out, where it has no room for them), in viewport CSS pixels */
  beside: { left: number; top: number; right: number; bottom: number }[];
}

export function labelStatsOf(pane: GraphPane | null | undefined): LabelStats {
  if (!pane) return { items: 0, labelled: 0, labels: 0, legible: 0, scale: 0, beside: [] };
  const r = pane.canvas.getBoundingClientRect();
  return { items: pane.lastItems.onScreen, labelled: pane.lastItems.labelled, labels: pane.labelCount, legible: pane.legibleCount, scale: pane.camera.s,
    beside: pane.lastBeside.map(([x0, y0, x1, y1]) => ({ left: r.left + x0, top: r.top + y0, right: r.left + x1, bottom: r.top + y1 })) };
}

/** The text the pane's last frame drew on drawn item `item` when it is a node (null: none, or a group). */
export function labelTextOf(pane: GraphPane | null | undefined, item: number): string | null {
  if (!pane || item < 0 || pane.view?.items[item]?.node === undefined || pane.view.items[item].node < 0) return null;
  return pane.lastTexts.get(item) ?? null;
}

/** The drawn items, open groups' frames and edges of a pane that are not wholly inside it (ids; groups by their id). */
export function outsideOf(pane: GraphPane | null | undefined, idOf: (item: number) => number | string): (number | string)[] {
  const v = pane?.view;
  if (!pane || !v) return [];
  const { width: w, height: h } = pane.surface;
  const out: (number | string)[] = [];
  const off = (x0: number, y0: number, x1: number, y1: number) => {
    const [a, b] = pane.camera.toScreen(x0, y0), [c, d] = pane.camera.toScreen(x1, y1);
    return a < -0.5 || b < -0.5 || c > w + 0.5 || d > h + 0.5;
  };
  v.items.forEach((it, k) => { if (off(it.x - it.w / 2, it.y - it.h / 2, it.x + it.w / 2, it.y + it.h / 2)) out.push(idOf(k)); });
  v.frames.forEach((f) => { if (off(f.x - f.w / 2, f.y - f.h / 2, f.x + f.w / 2, f.y + f.h / 2)) out.push(f.cluster.id); });
  // an edge's curve stays inside its points' hull
  v.edges.forEach((e) => {
    const p = e.points;
    if (!p) return;
    for (let k = 0; k < p.length; k += 2) {
      if (off(p[k], p[k + 1], p[k], p[k + 1])) { out.push(`edge ${idOf(e.s)} → ${idOf(e.t)}`); return; }
    }
  });
  return out;
}

/** The badges a pane drew in its last frame, in viewport (client) CSS pixels. */
/** A pane's drawn nodes and closed groups at least partly on screen, in viewport CSS pixels. */
export function itemRectsOf(pane: GraphPane | null | undefined, idOf: (item: number) => number | string): ItemRect[] {
  const v = pane?.view;
  if (!pane || !v) return [];
  const r = pane.canvas.getBoundingClientRect();
  const out: ItemRect[] = [];
  v.items.forEach((it, k) => {
    const q = pane.viewport.clientRect([it.x - it.w / 2, it.y - it.h / 2, it.x + it.w / 2, it.y + it.h / 2]);
    if (q.right < r.left || q.left > r.right || q.bottom < r.top || q.top > r.bottom) return;
    out.push({ id: idOf(k), ...q });
  });
  return out;
}

export interface ItemRect { id: number | string; left: number; top: number; right: number; bottom: number; }

export function badgesOf(pane: GraphPane | null | undefined): BadgeInfo[] {
  if (!pane || !pane.view) return [];
  const r = pane.canvas.getBoundingClientRect();
  const items = pane.view.items;
  return pane.badges.map((b) => ({
    id: items[b.item].cluster ? items[b.item].cluster!.id : pane.model.nodes[items[b.item].node].id,
    severity: b.level === LEVEL_WARNING ? "warning" : b.level === LEVEL_RESOLVED ? "resolved" : b.level === LEVEL_INFO ? "info" : "info",
    label: b.label, x: r.left + b.x, y: r.top + b.y,
  }));
}

export interface GraphWidgetApi {
  /** resolves when the first complete drawing is on screen */
  ready: Promise<void>;
  /** resolves when the latest layout (after expand/collapse/select) is drawn */
  idle(): Promise<void>;
  nodeCount(): number;
  edgeCount(): number;
  graphNodeCount(): number;
  graphEdgeCount(): number;
  /** the node's record as the view reads it (every field, absent optional ones null), or null for an unknown id */
  record(id: number): Record<string, unknown> | null;
  visibleNodeIds(): number[];
  /** the closed groups drawn: kind module, repeat (a fold of identical modules), chain, fanin or range; label is
   * the box's first line ("h.0–11 · GPT2Block ×12"), cls the module class when the graph names it */
  groups(): { id: string; kind: string; label: string; size: number; cls: string | null; count: number | null }[];
  select(id: number | null): Promise<boolean>;
  selected(): number | null;
  inspectorText(): string;
  search(query: string): number;
  searchNext(): Promise<number | null>;
  highlightedIds(): (number | string)[];
  colourBy(metric: MetricName): void;
  colour(): MetricName;
  /** the fill of a drawn node or closed group on the colour scale (a CSS hex colour), null when it is not drawn */
  nodeColour(id: number | string): string | null;
  legendText(): string;
  expand(groupId: string): Promise<void>;
  collapse(groupId: string): Promise<void>;
  expandAll(): Promise<void>;
  collapseAll(): Promise<void>;
  nodeScreenPosition(id: number | string): { x: number; y: number } | null;
  edgeScreenPosition(source: number | string, target: number | string): { x: number; y: number } | null;
  centre(id: number | string): boolean;
  /** the op label the last frame drew on node id's box (whole, or cut with "…"); null when it drew none */
  labelText(id: number): string | null;
  fit(): void;
  /** labels drawn in the last frame: node and group labels, frame titles (not edge counts nor badges) */
  labelCount(): number;
  /** the last frame's drawn items on screen and how many carry a legible label (9 px or more on screen) */
  labelStats(): LabelStats;
  /** ids of the drawn items and open groups not wholly on screen, and "edge <id> → <id>" for a drawn edge that
   * leaves it ([] when the whole view is) */
  outside(): (number | string)[];
  /** what a group holds, one level down: node ids and group ids (a fold: its members) */
  children(groupId: string): (number | string)[];
  /** whether the side panel is shown */
  panelShown(): boolean;
  /** open groups drawn as titled frames: `{id, kind, label, size, rect}` (rect in viewport CSS pixels; label is the
   * title, "attn · CausalSelfAttention · 43 ops") */
  frames(): { id: string; kind: string; label: string; size: number; rect: { left: number; top: number; right: number; bottom: number } }[];
  /** the drawn items (nodes and closed groups) at least partly on screen, as viewport CSS pixel rectangles */
  itemRects(): ItemRect[];
  /** the advisor's findings carried by the graph, in their order: `{rule, severity, nodes, source}` ([] if none) */
  findings(): FindingSummary[];
  /** picks finding i in the Findings tab: outlines its nodes, opens their groups, selects and centres its first
   * node (the cause); resolves to that node's id; rejects for an index that is not a finding */
  selectFinding(i: number): Promise<number | null>;
  /** the Findings tab as text */
  findingsText(): string;
  /** the finding badges drawn in the last frame (on screen only) */
  findingBadges(): BadgeInfo[];
  /** the view as SVG text, as the toolbar's Save… → SVG saves it: what is on screen (panes, labels, badges, legend);
   * every drawn node's shape carries `data-node-id`, every closed group's `data-group-id` */
  toSVG(): string;
  readonly timings: Record<string, number | string>;
  readonly error: string | null;
}

export function attachApi(app: App): GraphWidgetApi {
  const view = () => app.pane?.view ?? null;
  const itemOf = (id: number | string): number => {
    const v = view();
    if (!v || !app.model) return -1;
    if (typeof id === "string") return v.itemOfCluster.get(id) ?? -1;
    const i = app.model.indexOf.get(id);
    return i === undefined ? -1 : v.rep[i];
  };
  // an open group is drawn as a frame, not as an item
  const frameOf = (id: number | string): number => (typeof id === "string" ? view()?.frameOfCluster.get(id) ?? -1 : -1);
  const cluster = (id: string) => {
    const c = app.hier?.clusters.get(id);
    if (!c) throw new Error(`no group with id ${JSON.stringify(id)}`);
    return c;
  };
  const api: GraphWidgetApi = {
    ready: app.ready,
    idle: async () => { await app.ready; await app.pane?.idle(); },
    nodeCount: () => view()?.items.length ?? 0,
    edgeCount: () => view()?.edges.length ?? 0,
    graphNodeCount: () => app.model?.n ?? 0,
    graphEdgeCount: () => app.model?.edges.length ?? 0,
    record: (id) => {
      const i = app.model?.indexOf.get(id);
      // a columnar row gives its record through toJSON (model/columnar.ts); a record is one already
      return i === undefined ? null : (JSON.parse(JSON.stringify(app.model!.nodes[i])) as Record<string, unknown>);
    },
    visibleNodeIds: () => (view()?.items ?? []).filter((it) => it.node >= 0).map((it) => app.model!.nodes[it.node].id),
    groups: () => (view()?.items ?? []).filter((it) => it.cluster).map((it) => ({ id: it.cluster!.id, kind: it.cluster!.kind, label: it.label, size: it.cluster!.size,
      cls: it.cluster!.cls, count: it.cluster!.repeat?.count ?? null })),
    select: (id) => app.selectId(id, true, false),
    selected: () => (app.pane && app.pane.marks.selectedNode >= 0 ? app.model!.nodes[app.pane.marks.selectedNode].id : null),
    inspectorText: () => {
      const el = app.root.querySelector<HTMLElement>(".gw-tab-inspector");
      return el ? (el.hidden ? el.textContent ?? "" : el.innerText) : "";
    },
    search: (q) => app.search(q),
    searchNext: () => app.searchStep(1),
    highlightedIds: () => {
      // drawn items holding at least one search match: node ids, or group ids for matches inside groups
      const v = view(), mask = app.matchMask();
      if (!v || !mask) return [];
      const hit = new Uint8Array(v.items.length);
      for (let i = 0; i < mask.length; i++) if (mask[i]) hit[v.rep[i]] = 1;
      const out: (number | string)[] = [];
      v.items.forEach((it, k) => { if (hit[k]) out.push(it.cluster ? it.cluster.id : app.model!.nodes[it.node].id); });
      return out;
    },
    colourBy: (m) => {
      if (!isMetricName(m)) throw new Error(`unknown colour metric ${JSON.stringify(m)}; use ${METRIC_ORDER.join(", ")}`);
      app.colourBy(m, false);
    },
    colour: () => app.metric,
    nodeColour: (id) => app.pane?.colours.itemColour(itemOf(id)) ?? null,
    legendText: () => app.root.querySelector(".gw-legend")?.textContent ?? "",
    expand: (id) => app.pane!.expand(cluster(id)),
    collapse: (id) => app.pane!.collapse(cluster(id)),
    expandAll: () => app.expandAll(),
    collapseAll: () => app.collapseAll(),
    nodeScreenPosition: (id) => app.pane?.viewport.itemClientPosition(itemOf(id)) ?? app.pane?.viewport.frameClientPosition(frameOf(id)) ?? null,
    edgeScreenPosition: (a, b) => app.pane?.viewport.edgeClientPosition(itemOf(a), itemOf(b)) ?? null,
    centre: (id) => {
      const i = itemOf(id);
      const f = i < 0 ? frameOf(id) : -1;
      if (i < 0 && f < 0) return false;
      if (i >= 0) app.pane!.viewport.centreItem(i); else app.pane!.viewport.centreFrame(f);
      app.pane!.drawNow();
      return true;
    },
    labelText: (id) => labelTextOf(app.pane, itemOf(id)),
    labelCount: () => app.pane?.labelCount ?? 0,
    labelStats: () => labelStatsOf(app.pane),
    outside: () => outsideOf(app.pane, (k) => { const it = view()!.items[k]; return it.cluster ? it.cluster.id : app.model!.nodes[it.node].id; }),
    children: (id) => cluster(id).children.map((c) => (typeof c === "number" ? app.model!.nodes[c].id : c.id)),
    panelShown: () => !app.root.querySelector<HTMLElement>(".gw-side")?.hidden,
    frames: () => (view()?.frames ?? []).map((f) => ({ id: f.cluster.id, kind: f.cluster.kind, label: f.title, size: f.cluster.size,
      rect: app.pane!.viewport.clientRect([f.x - f.w / 2, f.y - f.h / 2, f.x + f.w / 2, f.y + f.h / 2]) })),
    itemRects: () => itemRectsOf(app.pane, (k) => { const it = view()!.items[k]; return it.cluster ? it.cluster.id : app.model!.nodes[it.node].id; }),
    fit: () => { app.pane?.viewport.fit(); app.pane?.drawNow(); },
    findings: () => (app.model?.doc.findings ?? []).map((f) => ({ rule: f.rule, severity: f.severity, nodes: [...f.nodes], source: f.source })),
    selectFinding: (i) => app.selectFinding(i, 0),
    findingsText: () => app.findingsText(),
    findingBadges: () => badgesOf(app.pane),
    toSVG: () => app.toSVG(),
    get timings() {
      const p = app.pane?.timings;
      const f = app.pane?.frameCounts;
      return { unpack: app.timings.unpack, decode: app.timings.decode, total: app.timings.total, view: p?.view ?? 0, layout: p?.layout ?? 0, draw: p?.draw ?? 0, algorithm: p?.algorithm ?? "", worker: p?.worker ?? "",
        fullFrames: f?.full ?? 0, cachedFrames: f?.cached ?? 0 };
    },
    get error() { return app.error; },
  };
  (app.root as HTMLElement & { graphwidget?: GraphWidgetApi }).graphwidget = api;
  return api;
}
