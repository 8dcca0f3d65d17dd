/**
 * The N-way view (docs/nway.md §5): one pane per graph of an N-way document, the reference once, side by side
 * (wrapping to rows when the view is narrow), on one shared colour scale. Selecting a node selects and centres its
 * counterpart in every pane (through the reference; a fused node's compiled region where a side has none), Sync
 * keeps pan and zoom in step, and each pane's header gives the side's label and its verdict against the reference.
 * For the ranks of one job, the inspector shows the selected node's time on every rank and the straggler's pane
 * carries a badge. The panes, the layout and the colour scale are the graph view's (ui/app.ts); the marks are the
 * diff view's (diff/model.ts, canvas/marks.ts).
 */
import { App, type AppOptions } from "../ui/app";
import { h } from "../ui/dom";
import { renderLegend } from "../ui/legend";
import { injectCss } from "../ui/styles";
import { GraphModel } from "../model/graph";
import type { Cluster } from "../model/grouping";
import { formatCount } from "../model/format";
import type { TabName } from "../ui/panel";
import { STATUS_NAMES, ST_ADDED, ST_CHANGED, statusLine } from "../diff/model";
import { linkCameras } from "../diff/sync";
import { decodeNway, type NWayDoc } from "./doc";
import { NWayModel } from "./model";
import { RankTimes } from "./ranks";
import { renderHeader } from "./header";
import { renderNWayInspector } from "./inspector";
import { attachNWayApi } from "./api";
import type { PictureParts } from "../picture/compose";
import type { GraphDoc } from "../schema/types";
import css from "./nway.css";

export interface NWayAppOptions extends AppOptions {
  /** keep pan and zoom of the panes in step (default true) */
  sync?: boolean;
  /** every selection change: the selected node's id in each pane (null where it has none); user = from a click */
  onSelectAll?(ids: (number | null)[], refId: number | null, user: boolean): void;
  onSync?(on: boolean, user: boolean): void;
}

export const NWAY_TABS: [TabName, string][] = [["inspector", "Inspector"], ["findings", "Findings"]];

/** The narrowest a pane gets before the panes wrap to another row (CSS px). */
const MIN_PANE_WIDTH = 300;

/**
 * Columns for n panes in a row `width` px wide: as many as fit, then as few as keep the same number of rows, so
 * the rows are balanced (four panes: 2 × 2 rather than 3 + 1).
 */
export function gridColumns(n: number, width: number, minWidth = MIN_PANE_WIDTH): number {
  const fit = Math.max(1, Math.min(n, Math.floor(width / minWidth)));
  const rows = Math.ceil(n / fit);
  return Math.ceil(n / rows);
}

/** The side panel's narrowest width (ui/style.css: `.gw-side`, clamp(340px, 30%, 420px)). */
const PANEL_MIN = 340;

/**
 * Whether a view `width` px wide has room for n panes side by side and the side panel beside them: only then
 * does the panel open by itself and take its share; otherwise it floats over the panes when opened.
 */
export function roomForPanel(n: number, width: number, minWidth = MIN_PANE_WIDTH): boolean {
  const panel = Math.min(420, Math.max(PANEL_MIN, 0.3 * width));
  return width - panel >= Math.max(1, n) * minWidth;
}

/** Layout workers started before the document is decoded (the usual three-way compare); more panes start their own. */
const EARLY_WORKERS = 3;

export class NWayApp extends App {
  doc: NWayDoc | null = null;
  nway: NWayModel | null = null;
  ranks: RankTimes | null = null;
  syncOn = true;
  /** settles when every pane has followed the latest selection */
  followDone: Promise<void> = Promise.resolve();
  private syncBtn: HTMLButtonElement;
  /** the pane the latest selection was made in (the inspector shows its node) */
  private focus = 0;
  /** per pane: the node a follow-up selection is expected for (not re-propagated) */
  private following: (number | null)[] = [];
  private regionMarked = false;
  private gridWatch: ResizeObserver;
  /** the verdict sentence, whole and wrapped, above the panes (the toolbar has no room for it) */
  private sentenceEl: HTMLElement;

  constructor(el: HTMLElement, protected nopts: NWayAppOptions = {}) {
    super(el, nopts, NWAY_TABS, EARLY_WORKERS);
    this.syncOn = nopts.sync !== false;
    el.classList.add("gw-nway");
    injectCss(el, "graphwidget-nway-style", css);
    this.syncBtn = h("button", { class: "gw-sync", text: "Sync", title: "Pan and zoom all panes together",
      attrs: { type: "button", "data-action": "sync", "aria-pressed": String(this.syncOn) }, on: { click: () => this.setSync(!this.syncOn, true) } });
    this.toolbar.extra.appendChild(this.syncBtn);
    this.toolbar.searchInput.placeholder = "Search every pane…";
    this.sentenceEl = h("div", { class: "gw-summary gw-nway-summary", attrs: { "aria-label": "The verdict against the reference" } });
    el.insertBefore(this.sentenceEl, this.body);
    this.gridWatch = new ResizeObserver(() => this.placePanes());
    this.gridWatch.observe(this.main);
  }

  /** Side by side while they fit, else in balanced rows; the last pane takes what its row has left. */
  private placePanes(): void {
    this.root.classList.toggle("gw-crowded", !this.roomy());
    const n = this.panes.length;
    if (!n) return;
    const cols = gridColumns(n, this.main.clientWidth);
    this.main.style.setProperty("--gw-nway-cols", String(cols));
    const spare = cols * Math.ceil(n / cols) - n;
    this.panes.forEach((p, k) => { p.el.style.gridColumn = k === n - 1 && spare ? `span ${spare + 1}` : ""; });
  }

  override dispose(): void {
    this.gridWatch.disconnect();
    super.dispose();
  }

  /** Whether the view has room for every pane and the side panel beside them (roomForPanel). */
  private roomy(): boolean {
    return roomForPanel(this.paneCount(), this.root.clientWidth);
  }

  /** How many panes there are, or will be once the document is decoded (the usual three before). */
  private paneCount(): number {
    return this.doc?.labels.length ?? (this.panes.length || EARLY_WORKERS);
  }

  /**
   * Narrow, or too narrow for every pane and the panel side by side (class gw-crowded): the panes need the width,
   * so the side panel starts hidden and floats over them when opened.
   */
  protected override narrowChanged(narrow: boolean): void {
    if (!this.panelChosen && (narrow || !this.roomy())) this.showPanel(false);
  }

  /** The panel at open: as the graph view decides (shown with the Findings when the advisor warns), where the
   * panes leave room for it; else hidden until something is selected. */
  protected override openPanel(docs: GraphDoc[]): void {
    if (this.panelChosen) return;
    if (roomForPanel(docs.length, this.root.clientWidth)) super.openPanel(docs);
    else this.showPanel(false);
  }

  /** A picture of the view: the verdict sentence above the panes, then the legend. */
  protected override pictureParts(): PictureParts {
    const parts = super.pictureParts();
    return { ...parts, strips: [this.sentenceEl, ...parts.strips] };
  }

  protected override attach(): void {
    attachNWayApi(this);
  }

  /** Decodes the N-way bytes (gzip or plain JSON) or takes a parsed document, and draws every pane. */
  override async load(data: unknown): Promise<void> {
    try {
      const t = performance.now();
      const doc = await decodeNway(data, this.unpacker, this.timings);
      const models = doc.graphs.map((g) => new GraphModel(g));
      this.doc = doc;
      this.nway = new NWayModel(doc, models);
      this.ranks = doc.ranks ? new RankTimes(doc.ranks) : null;
      this.following = models.map(() => null);
      this.timings.decode = performance.now() - t;
      const sentence = doc.sentence || doc.labels.join(" · ");
      this.sentenceEl.replaceChildren(h("div", { class: "gw-diff-sentence", attrs: { "data-key": "sentence" }, text: sentence }));
      // the sentence strip says the verdict whole; the toolbar has no title of its own
      await this.show(doc.graphs.map((g, k) => ({ doc: g, label: doc.labels[k] })), models, "");
    } catch (err) {
      this.fail(err);
    }
  }

  protected override afterShow(): void {
    const d = this.doc!, m = this.nway!;
    this.panes.forEach((p, k) => {
      p.setStatus(m.status[k]);
      p.el.classList.add("gw-nway-pane");
      p.el.setAttribute("data-pane", String(k));
      p.el.setAttribute("data-label", d.labels[k]);
      const title = p.el.querySelector<HTMLElement>(".gw-pane-title");
      if (title) renderHeader(title, d.labels[k], d.rows[k], d.kind, d.labels[0], k, this.ranks);
    });
    this.placePanes();
    linkCameras(this.panes, () => this.syncOn);
    this.showFindings(this.models.map((g, k) => ({ side: k, label: d.labels[k], findings: g.doc.findings ?? null })));
  }

  protected override drawLegend(): void {
    renderLegend(this.legend, this.scale);
    if (this.nway) this.legend.appendChild(this.statusLegend());
    this.appendFindingsLegend();
  }

  private statusLegend(): HTMLElement {
    const item = (cls: string, badge: string, text: string) =>
      h("span", { class: "gw-st-item" }, h("span", { class: `gw-st-swatch ${cls}`, text: badge }), text);
    const ranks = this.doc!.kind === "ranks";
    return h("div", { class: "gw-legend-status", attrs: { "data-legend": "status" },
      title: `Outline, stripe and badge. In ${this.doc!.labels[0]} (the reference): − a node some ${ranks ? "rank lacks" : "side lacks"}, Δ one some side changed. In the other panes: + a node only there, Δ changed from the reference.` },
    item("gw-st-changed", "Δ", "changed"),
    item("gw-st-added", "+", ranks ? "only on this rank" : "only in this side"),
    item("gw-st-removed", "−", ranks ? "not on every rank" : "missing in a side"));
  }

  protected override statusText(): [string, string] {
    const d = this.doc!, m = this.models[0];
    const panes = `${d.labels.length} ${d.kind === "ranks" ? "ranks" : "panes"}`;
    return [`${panes} · reference ${d.labels[0]} · ${formatCount(m.n)} nodes`, panes];
  }

  protected override describeItem(k: number, item: number): string | null {
    const status = this.statusNote(k, item), found = this.findingNote(k, item);
    return status && found ? `${status}\n${found}` : status ?? found;
  }

  private statusNote(k: number, item: number): string | null {
    const it = this.panes[k]?.view?.items[item], m = this.nway;
    if (!it || !m) return null;
    const labels = this.doc!.labels;
    if (it.cluster) {
      const members: number[] = [];
      this.hiers[k].forEachMember(it.cluster, (i) => members.push(i));
      return statusLine(m.status[k], members, 0);
    }
    const i = it.node, s = m.status[k][i];
    const region = m.regions[k].get(i);
    const lines: string[] = [];
    if (region) lines.push(`compiled region covering ${formatCount(region.covers.length)} nodes of ${labels[0]}`);
    if (k === 0) {
      const missing = m.missingIn(i);
      if (missing.length) {
        const fused = missing.filter((j) => m.fusedInto[j][i] >= 0);
        lines.push(`in ${m.presentIn[i]} of ${m.n - 1} ${this.doc!.kind === "ranks" ? "other ranks" : "sides"}; missing in ${missing.map((j) => labels[j] + (fused.includes(j) ? " (fused)" : "")).join(", ")}`);
      } else if (s === ST_CHANGED) lines.push("changed in a side");
    } else if (s === ST_ADDED) lines.push(`only in ${labels[k]} (no counterpart)`);
    else if (s === ST_CHANGED) lines.push(`changed: ${(m.fields[k].get(i) ?? []).join(", ") || "?"}`);
    return lines.length ? lines.join("\n") : null;
  }

  // ---- selection: every pane follows --------------------------------------------------------------------

  protected override onPaneSelect(k: number, node: number, user: boolean): void {
    const m = this.nway!;
    if (!user && this.following[k] === node) { this.following[k] = null; return; }
    this.focus = k;
    const cps = node >= 0 ? m.counterparts(k, node) : this.panes.map(() => ({ node: -1, fused: false }));
    const moves: Promise<void>[] = [];
    this.panes.forEach((p, j) => {
      const t = cps[j].node;
      if (j === k || p.marks.selectedNode === t) return;
      this.following[j] = t;
      moves.push(p.select(t, { centre: t >= 0, user: false }));
    });
    this.followDone = Promise.all(moves).then(() => {});
    this.markRegions(cps.map((c) => c.node));
    const ids = cps.map((c, j) => m.idOf(j, c.node));
    const refId = node >= 0 ? m.idOf(0, m.refOf(k, node)) : null;
    this.root.setAttribute("data-gw-selected", refId === null ? "" : String(refId));
    this.renderInspector();
    this.findingsTab?.setSelected(k, m.idOf(k, node));
    if (node >= 0 && user && !this.keepTab) this.panel.show("inspector");
    // the Inspector opens by itself beside panes that leave it room; over them only when asked (the Panel button)
    if (node >= 0 && user && this.roomy()) this.revealPanel();
    this.nopts.onSelectAll?.(ids, refId, user);
  }

  /** A compiled region selected in a pane: the reference nodes it covers are outlined in the reference pane. */
  private markRegions(nodes: number[]): void {
    const m = this.nway!, covered: number[] = [];
    nodes.forEach((i, j) => {
      const r = i >= 0 ? m.regions[j].get(i) : undefined;
      if (r) for (const id of r.covers) { const x = this.models[0].indexOf.get(id); if (x !== undefined) covered.push(x); }
    });
    if (!covered.length && !this.regionMarked) return;
    const mask = covered.length ? new Uint8Array(this.models[0].n) : null;
    covered.forEach((x) => { mask![x] = 1; });
    this.markNodes(this.panes.map((_, j) => (j === 0 ? mask : null)));
    this.regionMarked = covered.length > 0;
  }

  /** Selects node id in pane k (null clears every pane) and centres it and its counterparts; false for an unknown id. */
  async selectOn(k: number, id: number | null, centre = true, user = false): Promise<boolean> {
    const ok = await this.selectId(id, centre, user, k);
    await this.followDone;
    return ok;
  }

  /** The node id selected in pane k, or null. */
  selectedOn(k: number): number | null {
    const p = this.panes[k];
    return p && p.marks.selectedNode >= 0 ? this.models[k].nodes[p.marks.selectedNode].id : null;
  }

  protected override async selectFindingNode(side: number, node: number): Promise<void> {
    await this.selectOn(side, this.models[side].nodes[node].id, true, true);
  }

  override renderInspector(): void {
    const m = this.nway;
    if (!m || this.panes.length < m.n) return;
    const k = this.focus;
    renderNWayInspector(this.panel.body("inspector"), {
      model: m, labels: this.doc!.labels, hiers: this.hiers, expanded: this.panes.map((p) => p.layout.expanded),
      pane: k, node: this.panes[k].marks.selectedNode, ranks: this.ranks,
      select: (j, i) => void this.selectOn(j, this.models[j].nodes[i].id, true, true),
      collapse: (j, c: Cluster) => void this.panes[j].collapse(c),
    });
  }

  setSync(on: boolean, user = false): void {
    this.syncOn = on;
    this.syncBtn.setAttribute("aria-pressed", String(on));
    this.nopts.onSync?.(on, user);
  }

  /** Status name of node id in pane k ("added": only there; "removed": the reference's node some pane lacks). */
  statusOf(k: number, id: number): string | null {
    const i = this.models[k]?.indexOf.get(Number(id));
    return i === undefined ? null : STATUS_NAMES[this.nway!.status[k][i]] ?? null;
  }
}

