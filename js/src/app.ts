/**
 * The whole view: toolbar, main area (one graph pane now; room for two in a diff view), legend, side panel.
 * Shared by the anywidget view (widget.ts) and the standalone export (viewer.ts).
 */
import { decodeGraph, GraphModel } from "./data";
import { Hierarchy, type Cluster } from "./grouping";
import { GraphPane } from "./pane";
import { defaultMetric, isMetricName, METRIC_ORDER, METRICS, type MetricName } from "./colour";
import { h } from "./dom";
import { renderLegend } from "./legend";
import { renderInspector } from "./inspector";
import { SidePanel } from "./panel";
import { TopTable } from "./table";
import { maskOf, searchNodes } from "./search";
import { formatCount } from "./format";
import { injectStyles } from "./styles";
import { attachApi } from "./api";
import type { GraphDoc } from "./types";

export interface AppOptions {
  /** CSS height of the whole view ("600px", "100%") */
  height?: string;
  /** colour metric to start with; default: backward time for timed graphs, else saved bytes */
  metric?: MetricName | null;
  /** fired on every selection change; user = it came from a click/keypress in this view */
  onSelect?(id: number | null, user: boolean): void;
  onMetric?(metric: MetricName, user: boolean): void;
}

export type State = "loading" | "layout" | "ready" | "error";

export class App {
  readonly root: HTMLElement;
  readonly ready: Promise<void>;
  readonly timings = { decode: 0, total: 0 };
  model: GraphModel | null = null;
  hier: Hierarchy | null = null;
  pane: GraphPane | null = null;
  metric: MetricName = "saved_bytes";
  error: string | null = null;
  private resolveReady!: () => void;
  private rejectReady!: (e: unknown) => void;
  private main: HTMLElement;
  private legend: HTMLElement;
  private panel = new SidePanel();
  private table: TopTable | null = null;
  private titleEl: HTMLElement;
  private statusEl: HTMLElement;
  private searchInput: HTMLInputElement;
  private searchCount: HTMLElement;
  private colourSelect: HTMLSelectElement;
  private groupButtons: HTMLElement;
  private hits: number[] = [];
  private hitCursor = 0;
  private hitMask: Uint8Array | null = null;
  private t0 = performance.now();

  constructor(el: HTMLElement, private opts: AppOptions = {}) {
    this.root = el;
    injectStyles(el);
    el.classList.add("graphwidget-root");
    if (opts.height) el.style.height = opts.height;
    this.ready = new Promise<void>((res, rej) => { this.resolveReady = res; this.rejectReady = rej; });
    this.ready.catch(() => {}); // a failed load is reported in the page and by `error`, not as an unhandled rejection
    this.setState("loading");
    this.titleEl = h("span", { class: "gw-title" });
    this.searchInput = h("input", { class: "gw-search", attrs: { type: "search", placeholder: "Search op, module, source…", "aria-label": "Search nodes", spellcheck: "false" } });
    this.searchCount = h("span", { class: "gw-count", attrs: { "aria-live": "polite" } });
    this.colourSelect = h("select", { class: "gw-colour", attrs: { "aria-label": "Colour nodes by" } });
    this.groupButtons = h("span", { class: "gw-groupbtns" },
      h("button", { text: "Expand all", attrs: { type: "button", "data-action": "expand-all" }, on: { click: () => void this.expandAll() } }),
      h("button", { text: "Collapse all", attrs: { type: "button", "data-action": "collapse-all" }, on: { click: () => void this.collapseAll() } }));
    this.statusEl = h("span", { class: "gw-status" });
    const toolbar = h("div", { class: "gw-toolbar" },
      this.titleEl,
      h("span", { class: "gw-searchbox" }, this.searchInput, this.searchCount),
      h("label", { class: "gw-colourbox" }, "Colour ", this.colourSelect),
      this.groupButtons,
      h("button", { text: "Fit", attrs: { type: "button", "data-action": "fit" }, on: { click: () => this.pane?.fit() } }),
      h("button", { class: "gw-paneltoggle", text: "Panel", attrs: { type: "button", "aria-pressed": "true" }, on: { click: (ev) => this.togglePanel(ev.currentTarget as HTMLElement) } }),
      this.statusEl);
    this.main = h("div", { class: "gw-main" });
    this.legend = h("div", { class: "gw-legend" });
    el.replaceChildren(toolbar, h("div", { class: "gw-body" }, h("div", { class: "gw-mainwrap" }, this.main, this.legend), this.panel.el));
    this.bindSearch();
    this.colourSelect.addEventListener("change", () => {
      if (isMetricName(this.colourSelect.value)) this.colourBy(this.colourSelect.value, true);
    });
    attachApi(this);
  }

  /** Decodes the graph bytes (gzip or plain JSON) or takes a parsed document, and draws it. */
  async load(data: unknown): Promise<void> {
    try {
      const t = performance.now();
      const doc: GraphDoc = data && typeof data === "object" && "nodes" in (data as object) ? (data as GraphDoc) : await decodeGraph(data);
      this.model = new GraphModel(doc);
      this.timings.decode = performance.now() - t;
      this.hier = new Hierarchy(this.model);
      this.pane?.dispose();
      this.pane = new GraphPane(this.main, this.model, this.hier, {
        select: (node, user) => this.onPaneSelect(node, user),
        changed: () => this.onChanged(),
        error: (err) => this.fail(err),
        busy: () => this.setState("layout"),
      });
      this.titleEl.textContent = doc.meta.title ?? "";
      this.fillColourSelect();
      this.table = new TopTable(this.model, (i) => void this.selectIndex(i, true, true));
      this.table.render();
      this.panel.bodies.top.replaceChildren(this.table.el);
      this.groupButtons.hidden = !this.hier.grouped;
      const hasGradBytes = doc.nodes.some((n) => (n.grad_bytes ?? 0) > 0);
      this.colourBy(this.opts.metric && isMetricName(this.opts.metric) ? this.opts.metric
        : defaultMetric(doc.meta.timed, hasGradBytes), false);
      this.renderInspector();
      await this.pane.relayout();
      if (this.error) throw new Error(this.error);
      this.timings.total = performance.now() - this.t0;
      this.resolveReady();
    } catch (err) {
      this.fail(err);
    }
  }

  private fail(err: unknown): void {
    this.error = err instanceof Error ? err.message : String(err);
    this.setState("error");
    this.main.replaceChildren(h("div", { class: "gw-error", text: `Could not show this graph: ${this.error}` }));
    this.rejectReady(err);
  }

  private setState(s: State): void {
    this.root.setAttribute("data-gw-state", s);
  }

  private onChanged(): void {
    const p = this.pane!, v = p.view!, m = this.model!;
    const groups = v.items.filter((it) => it.cluster).length;
    const shown = v.items.length - groups;
    this.statusEl.textContent = `${formatCount(m.n)} nodes · ${formatCount(m.edges.length)} edges` +
      (groups ? ` · showing ${formatCount(shown)} + ${formatCount(groups)} groups` : "") +
      ` · layout ${Math.round(p.timings.layout)} ms (${p.timings.algorithm})`;
    renderLegend(this.legend, p.scale);
    this.renderInspector();
    this.setState("ready");
  }

  // ---- selection ----------------------------------------------------------------------------------------

  private onPaneSelect(node: number, user: boolean): void {
    this.renderInspector();
    this.table?.setSelected(node >= 0 ? this.model!.nodes[node].id : -1);
    if (node >= 0 && user) this.panel.show("inspector");
    this.opts.onSelect?.(node >= 0 ? this.model!.nodes[node].id : null, user);
  }

  selectIndex(i: number, centre: boolean, user: boolean): Promise<void> {
    return this.pane ? this.pane.select(i, { centre, user }) : Promise.resolve();
  }

  /** Select by graph node id (null clears); unknown ids are ignored with a warning, returning false. */
  async selectId(id: number | null, centre = true, user = false): Promise<boolean> {
    try { await this.ready; } catch { return false; } // nothing to select in a view that failed to load
    if (id === null || id === undefined) { await this.selectIndex(-1, false, user); return true; }
    const i = this.model!.indexOf.get(Number(id));
    if (i === undefined) { console.warn(`graphwidget: no node with id ${id}`); return false; }
    if (i === this.pane!.selectedNode) { if (centre) this.pane!.centreItem(this.pane!.view!.rep[i]); return true; }
    await this.selectIndex(i, centre, user);
    return true;
  }

  renderInspector(): void {
    if (!this.model || !this.pane) return;
    renderInspector(this.panel.bodies.inspector, this.model, this.hier!, this.pane.selectedNode, this.pane.expanded, {
      select: (i) => void this.selectIndex(i, true, true),
      collapse: (c) => void this.pane!.collapse(c),
    });
  }

  // ---- colour -------------------------------------------------------------------------------------------

  private fillColourSelect(): void {
    const m = this.model!;
    this.colourSelect.replaceChildren(...METRIC_ORDER.map((name) => {
      const def = METRICS[name];
      const has = name === "none" || name === "saved_bytes" || m.nodes.some((n) => Number.isFinite(def.value(n)));
      return h("option", { text: has ? def.label : `${def.label} (n/a)`, attrs: { value: name, ...(has ? {} : { disabled: "" }) } });
    }));
  }

  colourBy(metric: MetricName, user = false): void {
    this.metric = metric;
    this.colourSelect.value = metric;
    this.pane?.setMetric(metric);
    if (this.pane) renderLegend(this.legend, this.pane.scale);
    this.opts.onMetric?.(metric, user);
  }

  // ---- search -------------------------------------------------------------------------------------------

  private bindSearch(): void {
    this.searchInput.addEventListener("input", () => this.search(this.searchInput.value));
    this.searchInput.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") { ev.preventDefault(); void this.searchStep(ev.shiftKey ? -1 : 1); }
      else if (ev.key === "Escape") { this.searchInput.value = ""; this.search(""); }
    });
  }

  /** Highlights matches and centres the first (or the group holding it); returns the number of matching nodes. */
  search(query: string): number {
    if (this.searchInput.value !== query) this.searchInput.value = query;
    if (!this.model || !this.pane) return 0;
    this.hits = searchNodes(this.model, query);
    this.hitCursor = 0;
    this.hitMask = this.hits.length ? maskOf(this.model.n, this.hits) : null;
    this.searchCount.textContent = query.trim() ? (this.hits.length ? `1 / ${this.hits.length}` : "no match") : "";
    this.pane.setSearch(this.hitMask, this.hits.length ? this.hits[0] : -1);
    if (this.hits.length) this.pane.centreItem(this.pane.view!.rep[this.hits[0]]);
    return this.hits.length;
  }

  /** Enter: the next match, opened out of its group if needed, selected and centred. */
  async searchStep(dir: 1 | -1): Promise<number | null> {
    if (!this.hits.length || !this.pane) return null;
    const first = this.pane.selectedNode !== this.hits[this.hitCursor];
    if (!first) this.hitCursor = (this.hitCursor + dir + this.hits.length) % this.hits.length;
    const node = this.hits[this.hitCursor];
    this.searchCount.textContent = `${this.hitCursor + 1} / ${this.hits.length}`;
    await this.pane.reveal(node);
    this.pane.setSearch(this.hitMask, node);
    await this.selectIndex(node, true, true);
    return this.model!.nodes[node].id;
  }

  matchMask(): Uint8Array | null {
    return this.hitMask;
  }

  // ---- groups -------------------------------------------------------------------------------------------

  expandAll(): Promise<void> {
    if (!this.pane || !this.hier) return Promise.resolve();
    return this.pane.setExpanded(new Set<Cluster>([this.hier.root, ...this.hier.allClusters()]));
  }

  collapseAll(): Promise<void> {
    if (!this.pane || !this.hier) return Promise.resolve();
    return this.pane.setExpanded(new Set<Cluster>([this.hier.root]));
  }

  private togglePanel(btn: HTMLElement): void {
    const hidden = !this.panel.el.hidden;
    this.panel.el.hidden = hidden;
    btn.setAttribute("aria-pressed", String(!hidden));
  }

  dispose(): void {
    this.pane?.dispose();
    this.root.replaceChildren();
  }
}
