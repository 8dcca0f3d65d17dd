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

/** The badges a pane drew in its last frame, in viewport (client) CSS pixels. */
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
  visibleNodeIds(): number[];
  groups(): { id: string; kind: string; label: string; size: number }[];
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
  fit(): void;
  /** labels drawn in the last frame: node and group labels, frame titles (not edge counts nor badges) */
  labelCount(): number;
  /** open groups drawn as titled frames: `{id, kind, label, size, rect}` (rect in viewport CSS pixels) */
  frames(): { id: string; kind: string; label: string; size: number; rect: { left: number; top: number; right: number; bottom: number } }[];
  /** the drawn items (nodes and closed groups) at least partly on screen, as viewport CSS pixel rectangles */
  itemRects(): { id: number | string; left: number; top: number; right: number; bottom: number }[];
  /** the advisor's findings carried by the graph, in their order: `{rule, severity, nodes, source}` ([] if none) */
  findings(): FindingSummary[];
  /** picks finding i in the Findings tab: outlines its nodes, opens their groups, selects and centres its first
   * node (the cause); resolves to that node's id; rejects for an index that is not a finding */
  selectFinding(i: number): Promise<number | null>;
  /** the Findings tab as text */
  findingsText(): string;
  /** the finding badges drawn in the last frame (on screen only) */
  findingBadges(): BadgeInfo[];
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
    visibleNodeIds: () => (view()?.items ?? []).filter((it) => it.node >= 0).map((it) => app.model!.nodes[it.node].id),
    groups: () => (view()?.items ?? []).filter((it) => it.cluster).map((it) => ({ id: it.cluster!.id, kind: it.cluster!.kind, label: it.label, size: it.cluster!.size })),
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
    labelCount: () => app.pane?.labelCount ?? 0,
    frames: () => (view()?.frames ?? []).map((f) => ({ id: f.cluster.id, kind: f.cluster.kind, label: f.title, size: f.cluster.size,
      rect: app.pane!.viewport.clientRect([f.x - f.w / 2, f.y - f.h / 2, f.x + f.w / 2, f.y + f.h / 2]) })),
    itemRects: () => {
      const p = app.pane, v = view();
      if (!p || !v) return [];
      const r = p.canvas.getBoundingClientRect();
      const out: { id: number | string; left: number; top: number; right: number; bottom: number }[] = [];
      for (const it of v.items) {
        const q = p.viewport.clientRect([it.x - it.w / 2, it.y - it.h / 2, it.x + it.w / 2, it.y + it.h / 2]);
        if (q.right < r.left || q.left > r.right || q.bottom < r.top || q.top > r.bottom) continue;
        out.push({ id: it.cluster ? it.cluster.id : app.model!.nodes[it.node].id, ...q });
      }
      return out;
    },
    fit: () => { app.pane?.viewport.fit(); app.pane?.drawNow(); },
    findings: () => (app.model?.doc.findings ?? []).map((f) => ({ rule: f.rule, severity: f.severity, nodes: [...f.nodes], source: f.source })),
    selectFinding: (i) => app.selectFinding(i, 0),
    findingsText: () => app.findingsText(),
    findingBadges: () => badgesOf(app.pane),
    get timings() {
      const p = app.pane?.timings;
      return { decode: app.timings.decode, total: app.timings.total, view: p?.view ?? 0, layout: p?.layout ?? 0, draw: p?.draw ?? 0, algorithm: p?.algorithm ?? "", worker: p?.worker ?? "" };
    },
    get error() { return app.error; },
  };
  (app.root as HTMLElement & { graphwidget?: GraphWidgetApi }).graphwidget = api;
  return api;
}
