/**
 * The whole view over a row of panes: toolbar, main area (one pane for a graph, two side by side for a diff),
 * legend, side panel. One colour scale is shared by all panes, so equal colours mean equal values; search marks
 * every pane. Shared by the anywidget view (entries/widget.ts) and the standalone export (entries/viewer.ts);
 * the diff view (diff/app.ts) extends it.
 */
import { decodeGraph } from "../model/decode";
import { GraphModel } from "../model/graph";
import { Hierarchy, type Cluster } from "../model/grouping";
import { isMetricName, makeScale, METRICS, type MetricName, type Scale } from "../model/colour";
import { maskOf, searchNodes } from "../model/search";
import { formatCount } from "../model/format";
import { GraphPane } from "../canvas/pane";
import { LayoutClient } from "../layout/client";
import { h } from "./dom";
import { renderLegend } from "./legend";
import { renderInspector } from "./inspector";
import { SidePanel, GRAPH_TABS, type TabName } from "./panel";
import { TopTable } from "./table";
import { Toolbar } from "./toolbar";
import { injectStyles } from "./styles";
import { attachApi } from "./api";
import { FindingsTab, findingsLegend, injectFindingStyles, type FindingSection } from "./findings";
import { FindingMarks, shortSource } from "../model/findings";
import { pickTheme, watchTheme } from "../canvas/theme";
import type { GraphDoc } from "../schema/types";
import { download, fileName, pngBlob, svgText, type PictureParts } from "../picture/compose";

export interface AppOptions {
  /** CSS height of the whole view ("600px", "100%") */
  height?: string;
  /** colour metric to start with: the graph's default colour as Python chose it (default: saved bytes) */
  metric?: MetricName | null;
  /** fired on every selection change; user = it came from a click/keypress in this view */
  onSelect?(id: number | null, user: boolean): void;
  onMetric?(metric: MetricName, user: boolean): void;
}

/** One pane's graph and its title (null: no title bar, as in the single-graph view). */
export interface PaneSpec { doc: GraphDoc; label: string | null; }

export type State = "loading" | "layout" | "ready" | "error";

export class App {
  readonly root: HTMLElement;
  readonly ready: Promise<void>;
  /** ms: unpacking the payload (in the worker, usually), the whole decode (unpacking included), load to drawn */
  readonly timings = { unpack: 0, decode: 0, total: 0 };
  models: GraphModel[] = [];
  hiers: Hierarchy[] = [];
  panes: GraphPane[] = [];
  labels: (string | null)[] = [];
  metric: MetricName = "saved_bytes";
  /** the colour scale every pane is drawn with */
  scale: Scale = makeScale("none", []);
  error: string | null = null;
  protected readonly toolbar: Toolbar;
  protected readonly main: HTMLElement;
  protected readonly body: HTMLElement;
  protected readonly legend: HTMLElement;
  protected readonly panel: SidePanel;
  private resolveReady!: () => void;
  private rejectReady!: (e: unknown) => void;
  private table: TopTable | null = null;
  private hits: number[][] = [];
  private hitMasks: (Uint8Array | null)[] = [];
  private hitSide = 0;
  private hitCursor = 0;
  private t0 = performance.now();
  private sizeWatch: ResizeObserver;
  private unwatchTheme: () => void;
  /** layout workers started with the view, so their start-up overlaps decoding; one per expected pane */
  private workers: LayoutClient[];
  private narrow: boolean | null = null;
  /** the Findings tab (null until shown) */
  protected findingsTab: FindingsTab | null = null;
  /** true while a pick in a side-panel list selects a node: the panel stays on that list */
  protected keepTab = false;
  /** the user showed or hid the side panel with its button: that choice holds */
  protected panelChosen = false;

  constructor(el: HTMLElement, protected opts: AppOptions = {}, tabs: [TabName, string][] = GRAPH_TABS, panes = 1) {
    this.root = el;
    this.workers = Array.from({ length: panes }, () => new LayoutClient());
    injectStyles(el);
    injectFindingStyles(el);
    el.classList.add("graphwidget-root");
    if (opts.height) el.style.height = opts.height;
    this.ready = new Promise<void>((res, rej) => { this.resolveReady = res; this.rejectReady = rej; });
    this.ready.catch(() => {}); // a failed load is reported in the page and by `error`, not as an unhandled rejection
    this.setState("loading");
    this.toolbar = new Toolbar({
      search: (q) => this.search(q),
      searchStep: (d) => void this.searchStep(d),
      colourBy: (m) => this.colourBy(m, true),
      expandAll: () => void this.expandAll(),
      collapseAll: () => void this.collapseAll(),
      fit: () => this.fitAll(),
      save: (kind) => void this.savePicture(kind),
      togglePanel: () => { this.panelChosen = true; this.showPanel(this.panel.el.hidden); return !this.panel.el.hidden; },
    });
    this.main = h("div", { class: "gw-main" });
    this.legend = h("div", { class: "gw-legend" });
    this.panel = new SidePanel(tabs);
    this.body = h("div", { class: "gw-body" }, h("div", { class: "gw-mainwrap" }, this.main, this.legend), this.panel.el);
    // the panel has nothing to show until something is selected: the graph gets its room (openPanel decides, once
    // the graph is known)
    this.panel.el.hidden = true;
    this.toolbar.setPanelShown(false);
    el.replaceChildren(this.toolbar.el, this.body);
    this.sizeWatch = new ResizeObserver(() => {
      const narrow = el.clientWidth < 900;
      if (narrow === this.narrow) return;
      this.narrow = narrow;
      el.classList.toggle("gw-narrow", narrow);
      this.narrowChanged(narrow);
    });
    this.sizeWatch.observe(el);
    // the legend's gradient is the canvas's palette, which follows the page's theme
    this.unwatchTheme = watchTheme(el, () => { if (this.panes.length) this.drawLegend(); });
    this.attach();
  }

  /** Puts the automation API on the root element (the diff view puts its own). */
  protected attach(): void {
    attachApi(this);
  }

  /** The view became narrower or wider than 900 px (the class gw-narrow on the root says which). */
  protected narrowChanged(_narrow: boolean): void {}

  /** Shows or hides the side panel (the Panel button). */
  protected showPanel(shown: boolean): void {
    this.panel.el.hidden = !shown;
    this.toolbar.setPanelShown(shown);
  }

  /**
   * The panel at open: hidden (the graph gets the room) unless the graph carries a warning of the advisor, which
   * the Findings tab then shows by itself. Decided before the first layout, so the first view fits the pane it
   * will have.
   */
  protected openPanel(docs: GraphDoc[]): void {
    if (this.panelChosen) return;
    const warned = docs.some((d) => (d.findings ?? []).some((f) => f.severity === "warning"));
    this.showPanel(warned);
    if (warned) this.panel.show("findings");
  }

  /** Something was selected: the panel shows it (unless the user hid the panel). */
  protected revealPanel(): void {
    if (!this.panelChosen && this.panel.el.hidden) this.showPanel(true);
  }

  // ---- pictures ------------------------------------------------------------------------------------------

  /** What a picture of the view holds: the title, the panes as drawn, the legend (the diff view adds its summary). */
  protected pictureParts(): PictureParts {
    const title = this.toolbar.title.textContent ?? "";
    return {
      panes: this.panes.map((pane, k) => ({ pane, idOf: (j: number) => {
        const it = pane.view!.items[j];
        return it.cluster ? it.cluster.id : this.models[k].nodes[it.node].id;
      } })),
      strips: [...(title ? [this.toolbar.title] : []), this.legend],
      background: this.pane?.surface.theme.bg ?? "#ffffff",
      title: title || "graph",
    };
  }

  /** The view as SVG text (what Save… → SVG writes). */
  toSVG(): string {
    if (!this.panes.some((p) => p.view)) throw new Error("nothing is drawn yet: wait for `ready`");
    return svgText(this.pictureParts());
  }

  /** Writes a picture of the view as a download (the toolbar's Save… menu). */
  async savePicture(kind: "svg" | "png"): Promise<void> {
    try {
      const parts = this.pictureParts();
      const blob = kind === "svg" ? new Blob([svgText(parts)], { type: "image/svg+xml" }) : await pngBlob(parts);
      download(blob, fileName(parts.title, kind), this.root);
    } catch (err) {
      this.toolbar.status.textContent = `could not save the picture: ${err instanceof Error ? err.message : String(err)}`;
    }
  }

  get model(): GraphModel | null { return this.models[0] ?? null; }
  get hier(): Hierarchy | null { return this.hiers[0] ?? null; }
  get pane(): GraphPane | null { return this.panes[0] ?? null; }

  /** The worker that unpacks the payload (the first pane's layout worker, started with the view), if any. */
  protected get unpacker(): LayoutClient | null {
    return this.workers[0] ?? null;
  }

  /** Decodes the graph payload (bytes or `{ base64 }`: model/decode.ts) or takes a parsed document, and draws it. */
  async load(data: unknown): Promise<void> {
    try {
      const t = performance.now();
      const doc: GraphDoc = data && typeof data === "object" && "nodes" in (data as object) ? (data as GraphDoc) : await decodeGraph(data, this.unpacker, this.timings);
      const model = new GraphModel(doc);
      this.timings.decode = performance.now() - t;
      await this.show([{ doc, label: null }], [model], doc.meta.title ?? "");
    } catch (err) {
      this.fail(err);
    }
  }

  /** Builds a pane per spec and draws them all; `ready` resolves once every pane is drawn. */
  protected async show(specs: PaneSpec[], models: GraphModel[], title: string): Promise<void> {
    this.panes.forEach((p) => p.dispose());
    this.models = models;
    this.labels = specs.map((s) => s.label);
    this.hiers = [];
    this.panes = [];
    const docs = specs.map((s) => s.doc);
    this.openPanel(docs);
    // The default colour is decided in Python (graphwidget/views/payload.py:default_colour) and arrives as the
    // widget's colour_by or the export's data-colour; without one, saved bytes (every graph has them).
    const metric: MetricName = this.opts.metric && isMetricName(this.opts.metric) ? this.opts.metric : "saved_bytes";
    this.metric = metric;
    const drawn: Promise<void>[] = [];
    for (let k = 0; k < models.length; k++) {
      this.hiers.push(new Hierarchy(models[k]));
      const pane = new GraphPane(this.main, models[k], this.hiers[k], {
        select: (node, user) => this.onPaneSelect(k, node, user),
        changed: () => this.onChanged(),
        error: (err) => this.fail(err),
        busy: () => this.setState("layout"),
        recolour: () => this.recolour(),
        describe: (item) => this.describeItem(k, item),
      }, specs[k].label, this.workers.shift());
      this.panes.push(pane);
      pane.colours.setMetric(metric, false);
      drawn.push(pane.relayout());
      // let this pane's view be built and sent to its worker before the next pane's groups are computed
      await Promise.resolve();
    }
    this.toolbar.title.textContent = title;
    this.toolbar.fillColours((m) => this.models.some((g) => g.nodes.some((n) => Number.isFinite(METRICS[m].value(n)))));
    this.toolbar.groupButtons.hidden = !this.hiers.some((x) => x.grouped);
    this.afterShow();
    this.colourBy(metric, false);
    this.renderInspector();
    await Promise.all(drawn);
    if (this.error) throw new Error(this.error);
    this.timings.total = performance.now() - this.t0;
    this.resolveReady();
  }

  /** After the panes exist, before the first layout: the graph view fills its Top nodes table. */
  protected afterShow(): void {
    const m = this.model!;
    this.table = new TopTable(m, (i) => void this.selectIndex(i, true, true));
    this.table.render();
    this.panel.body("top").replaceChildren(this.table.el);
    this.showFindings([{ side: 0, label: null, findings: m.doc.findings ?? null }]);
  }

  // ---- findings -----------------------------------------------------------------------------------------

  /** Fills the Findings tab and badges each pane's nodes (a section per pane; `resolved` as the diff says). */
  protected showFindings(sections: FindingSection[]): void {
    for (const sec of sections) {
      const p = this.panes[sec.side];
      p?.marks.setFindings(sec.findings && sec.findings.length ? new FindingMarks(this.models[sec.side], sec.findings, sec.resolved) : null);
    }
    this.findingsTab = new FindingsTab(sections, (side, k) => void this.selectFinding(k, side));
    this.panel.body("findings").replaceChildren(this.findingsTab.el);
    this.panel.setLabel("findings", this.findingsTab.label());
  }

  /**
   * Finding k of pane `side`: its nodes are opened out of their groups (the first 64: a loop can name thousands),
   * outlined, and its first node (the cause) is selected and centred. Resolves to the cause's id (null if the
   * finding names no node of this graph); rejects for an index that is not a finding.
   */
  async selectFinding(k: number, side = 0): Promise<number | null> {
    await this.ready;
    const p = this.panes[side], marks = p?.marks.findings;
    const n = marks?.findings.length ?? 0;
    if (!p || !marks || !Number.isInteger(k) || k < 0 || k >= n) throw new Error(`no finding ${JSON.stringify(k)}: this view has ${n} (0 to ${n - 1})`);
    const nodes = marks.nodes[k];
    const hidden = new Set<Cluster>();
    for (const i of nodes.subarray(0, 64)) for (const c of this.hiers[side].ancestors(i)) if (!p.layout.expanded.has(c)) hidden.add(c);
    if (hidden.size) {
      hidden.forEach((c) => p.layout.expanded.add(c));
      await p.relayout();
    }
    this.markNodes(this.panes.map((_, j) => (j === side ? marks.mask(k) : null)));
    this.findingsTab?.setCurrent(side, k);
    if (!nodes.length) return null;
    this.keepTab = true;
    try {
      await this.selectFindingNode(side, nodes[0]);
    } finally {
      this.keepTab = false;
    }
    return this.models[side].nodes[nodes[0]].id;
  }

  /** The Findings tab as text ("" before the graph is shown). */
  findingsText(): string {
    return this.findingsTab?.text() ?? "";
  }

  /** Selects and centres the cause of a picked finding (the diff view also moves the other side). */
  protected async selectFindingNode(side: number, node: number): Promise<void> {
    await this.selectIndex(node, true, true, side);
  }

  /** The legend's badge swatches, for the levels drawn in any pane. */
  protected appendFindingsLegend(resolvedText?: string): void {
    const levels = new Set<number>();
    for (const p of this.panes) if (p.marks.findings) p.marks.findings.level.forEach((l) => levels.add(l));
    const el = levels.size ? findingsLegend(levels, pickTheme(this.panes[0]?.el ?? this.root).dark, resolvedText) : null;
    if (el) this.legend.appendChild(el);
  }

  /** Tooltip lines for the findings in a drawn item of pane k ("! repeat-broadcast (homography.py:54)"). */
  protected findingNote(k: number, item: number): string | null {
    const p = this.panes[k], marks = p?.marks.findings, it = p?.view?.items[item];
    if (!marks || !it) return null;
    const ks = new Set<number>();
    if (it.node >= 0) marks.findingsOf(it.node).forEach((j) => ks.add(j));
    else this.hiers[k].forEachMember(it.cluster!, (i) => marks.findingsOf(i).forEach((j) => ks.add(j)));
    if (!ks.size) return null;
    const lines = [...ks].sort((a, b) => a - b).slice(0, 4).map((j) => {
      const f = marks.findings[j];
      const role = it.node >= 0 && marks.nodes[j][0] === it.node ? ", the cause" : "";
      return `${f.severity === "warning" ? "!" : "i"} ${f.rule}${f.source ? ` (${shortSource(f.source)})` : ""}${role}`;
    });
    if (ks.size > 4) lines.push(`… ${ks.size - 4} more findings`);
    return lines.join("\n");
  }

  protected fail(err: unknown): void {
    this.workers.forEach((w) => w.dispose());
    this.workers = [];
    this.error = err instanceof Error ? err.message : String(err);
    this.setState("error");
    this.main.replaceChildren(h("div", { class: "gw-error", text: `Could not show this graph: ${this.error}` }));
    this.rejectReady(err);
  }

  protected setState(s: State): void {
    this.root.setAttribute("data-gw-state", s);
  }

  private onChanged(): void {
    const [long, short] = this.statusText();
    // a narrow toolbar shows the short form whole rather than the long one cut to "8." (the long one on hover)
    this.toolbar.status.replaceChildren(h("span", { class: "gw-long", text: long }), h("span", { class: "gw-short", text: short }));
    this.toolbar.status.title = long;
    this.drawLegend();
    this.renderInspector();
    if (this.panes.every((p) => p.view && !p.layout.busy)) this.setState("ready");
  }

  /** The toolbar's status text, long (counts, what is drawn, the layout time) and short (the graph's size). */
  protected statusText(): [string, string] {
    const p = this.pane!, v = p.view!, m = this.model!;
    const groups = v.items.filter((it) => it.cluster).length;
    const shown = v.items.length - groups;
    return [`${formatCount(m.n)} nodes · ${formatCount(m.edges.length)} edges` +
      (groups ? ` · showing ${formatCount(shown)} + ${formatCount(groups)} groups` : "") +
      ` · layout ${Math.round(p.timings.layout)} ms (${p.timings.algorithm})`, `${formatCount(m.n)} nodes`];
  }

  /** The legend under the panes: the colour scale (the diff view adds the status marks). */
  protected drawLegend(): void {
    renderLegend(this.legend, this.scale);
    this.appendFindingsLegend();
  }

  /** An extra tooltip line for a drawn item of pane k (none in the graph view). */
  protected describeItem(k: number, item: number): string | null {
    return this.findingNote(k, item);
  }

  // ---- colour -------------------------------------------------------------------------------------------

  /** One scale over the drawn items of every laid-out pane (group sums where groups are drawn), applied to all. */
  recolour(): void {
    const parts = this.panes.map((p) => p.colours.itemSums());
    const grouped = this.panes.some((p) => p.view?.items.some((it) => it.cluster));
    let values: ArrayLike<number>;
    if (grouped && this.metric !== "none") values = concat(parts.filter((x): x is Float64Array => !!x));
    else values = concat(this.panes.map((p) => p.colours.values));
    this.scale = makeScale(this.metric, values);
    for (const p of this.panes) p.colours.applyScale(this.scale);
    this.drawLegend();
  }

  colourBy(metric: MetricName, user = false): void {
    this.metric = metric;
    this.toolbar.colourSelect.value = metric;
    for (const p of this.panes) p.colours.setMetric(metric, false);
    if (this.panes.length) this.recolour();
    else this.drawLegend();
    this.opts.onMetric?.(metric, user);
  }

  // ---- selection ----------------------------------------------------------------------------------------

  protected onPaneSelect(_k: number, node: number, user: boolean): void {
    this.renderInspector();
    this.table?.setSelected(node >= 0 ? this.model!.nodes[node].id : -1);
    this.findingsTab?.setSelected(0, node >= 0 ? this.model!.nodes[node].id : null);
    if (node >= 0) {
      const hidden = this.panel.el.hidden;
      this.revealPanel();
      if ((user || hidden) && !this.keepTab) this.panel.show("inspector");
    }
    this.opts.onSelect?.(node >= 0 ? this.model!.nodes[node].id : null, user);
  }

  selectIndex(i: number, centre: boolean, user: boolean, k = 0): Promise<void> {
    const p = this.panes[k];
    return p ? p.select(i, { centre, user }) : Promise.resolve();
  }

  /** Select by graph node id in pane k (null clears); unknown ids are ignored with a warning, returning false. */
  async selectId(id: number | null, centre = true, user = false, k = 0): Promise<boolean> {
    try { await this.ready; } catch { return false; } // nothing to select in a view that failed to load
    const p = this.panes[k];
    if (!p) return false;
    if (id === null || id === undefined) { await this.selectIndex(-1, false, user, k); return true; }
    const i = this.models[k].indexOf.get(Number(id));
    if (i === undefined) { console.warn(`graphwidget: no node with id ${id}`); return false; }
    if (i === p.marks.selectedNode) { if (centre) p.viewport.centreItem(p.view!.rep[i]); return true; }
    await this.selectIndex(i, centre, user, k);
    return true;
  }

  renderInspector(): void {
    const p = this.pane;
    if (!this.model || !p) return;
    renderInspector(this.panel.body("inspector"), this.model, this.hier!, p.marks.selectedNode, p.layout.expanded, {
      select: (i) => void this.selectIndex(i, true, true),
      collapse: (c) => void p.collapse(c),
    });
  }

  // ---- search -------------------------------------------------------------------------------------------

  /** Highlights matches in every pane and centres the first of each; returns the number of matching nodes. */
  search(query: string): number {
    const box = this.toolbar.searchInput;
    if (box.value !== query) box.value = query;
    if (!this.panes.length) return 0;
    this.hits = this.models.map((m) => searchNodes(m, query));
    this.hitMasks = this.hits.map((hs, k) => (hs.length ? maskOf(this.models[k].n, hs) : null));
    this.hitSide = Math.max(0, this.hits.findIndex((hs) => hs.length > 0));
    this.hitCursor = 0;
    const total = this.hits.reduce((a, hs) => a + hs.length, 0);
    this.toolbar.searchCount.textContent = !query.trim() ? "" : !total ? "no match"
      : this.panes.length === 1 ? `1 / ${total}` : this.hits.map((hs, k) => `${this.labels[k] ?? k + 1}: ${hs.length}`).join(" · ");
    this.panes.forEach((p, k) => {
      const hs = this.hits[k];
      p.marks.setSearch(this.hitMasks[k], hs.length ? hs[0] : -1);
      if (hs.length) p.viewport.centreItem(p.view!.rep[hs[0]]);
    });
    return total;
  }

  /** Enter: the next match (in the first pane that has matches), opened out of its group, selected and centred. */
  async searchStep(dir: 1 | -1): Promise<number | null> {
    const k = this.hitSide;
    const hits = this.hits[k];
    const p = this.panes[k];
    if (!hits || !hits.length || !p) return null;
    const first = p.marks.selectedNode !== hits[this.hitCursor];
    if (!first) this.hitCursor = (this.hitCursor + dir + hits.length) % hits.length;
    const node = hits[this.hitCursor];
    if (this.panes.length === 1) this.toolbar.searchCount.textContent = `${this.hitCursor + 1} / ${hits.length}`;
    await p.reveal(node);
    p.marks.setSearch(this.hitMasks[k], node);
    await this.selectIndex(node, true, true, k);
    return this.models[k].nodes[node].id;
  }

  /** Outlines the given nodes of each pane like search matches (a mask per pane; null clears), without a search. */
  protected markNodes(masks: (Uint8Array | null)[]): void {
    this.toolbar.searchInput.value = "";
    this.toolbar.searchCount.textContent = "";
    this.hits = this.panes.map(() => []);
    // kept, so highlightedIds() reports what is outlined (Enter has no hits to walk: it stays a no-op)
    this.hitMasks = this.panes.map((_, k) => masks[k] ?? null);
    this.panes.forEach((p, k) => p.marks.setSearch(masks[k] ?? null, -1));
  }

  /** Pane k's outlined nodes (search matches, a Changes row's or a finding's nodes; a mask), or null. */
  matchMask(k = 0): Uint8Array | null {
    return this.hitMasks[k] ?? null;
  }

  // ---- groups and camera --------------------------------------------------------------------------------

  async expandAll(): Promise<void> {
    await Promise.all(this.panes.map((p, k) => p.setExpanded(new Set<Cluster>([this.hiers[k].root, ...this.hiers[k].allClusters()]))));
  }

  async collapseAll(): Promise<void> {
    await Promise.all(this.panes.map((p, k) => p.setExpanded(new Set<Cluster>([this.hiers[k].root]))));
  }

  fitAll(): void {
    for (const p of this.panes) p.viewport.fit();
  }

  dispose(): void {
    this.sizeWatch.disconnect();
    this.unwatchTheme();
    this.workers.forEach((w) => w.dispose());
    this.panes.forEach((p) => p.dispose());
    this.root.replaceChildren();
  }
}

function concat(parts: ArrayLike<number>[]): Float64Array {
  if (parts.length === 1) return Float64Array.from(parts[0]);
  const out = new Float64Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) { out.set(p as ArrayLike<number>, o); o += p.length; }
  return out;
}
