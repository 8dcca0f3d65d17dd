/**
 * The diff view: A and B side by side (the App over two panes), each with its own layout and groups, coloured on
 * one shared scale, every node marked unchanged / changed / added / removed. Selecting a node selects and centres
 * its counterpart on the other side; Sync keeps pan and zoom in step; a summary strip sits on top and a Changes
 * tab in the side panel.
 */
import { App, type AppOptions } from "../ui/app";
import type { PictureParts } from "../picture/compose";
import { h } from "../ui/dom";
import { renderLegend } from "../ui/legend";
import { GraphModel } from "../model/graph";
import type { Cluster } from "../model/grouping";
import { formatCount } from "../model/format";
import type { ChangeRow, DiffDoc } from "../schema/diff";
import type { TabName } from "../ui/panel";
import { decodeDiff, diffFindings, normaliseDiff, type DiffFindings } from "./decode";
import { DiffModel, STATUS_NAMES, statusLine, type Side } from "./model";
import { fitSummary, renderSummary } from "./summary";
import { ChangesTable } from "./changes";
import { renderPairInspector } from "./inspector";
import { linkCameras } from "./sync";
import { renderStatusLegend } from "./legend";
import { attachDiffApi } from "./api";

export interface DiffAppOptions extends AppOptions {
  /** keep pan and zoom of the two panes in step (default true) */
  sync?: boolean;
  /** every selection change, as the ids selected on A and on B; user = from a click in this view */
  onSelectPair?(a: number | null, b: number | null, user: boolean): void;
  onSync?(on: boolean, user: boolean): void;
}

export const DIFF_TABS: [TabName, string][] = [["inspector", "Inspector"], ["changes", "Changes"], ["findings", "Findings"]];

export class DiffApp extends App {
  doc: DiffDoc | null = null;
  diff: DiffModel | null = null;
  changes: ChangesTable | null = null;
  /** the advisor's findings of both sides and which of A's are gone in B */
  findings: DiffFindings = { a: null, b: null, resolved: new Set() };
  syncOn = true;
  summaryText = "";
  /** settles when the other side has followed the latest selection */
  pairDone: Promise<void> = Promise.resolve();
  private summaryEl!: HTMLElement;
  /** a resize of the view folds or unfolds the strip (fitSummary) until the user chooses */
  private summaryWatch = new ResizeObserver(() => fitSummary(this.summaryEl, this.root.clientHeight));
  private syncBtn!: HTMLButtonElement;
  private focus: Side = 0;
  /** per side: the node a follow-up selection is expected for (not re-propagated, not reported) */
  private following: [number | null, number | null] = [null, null];
  private stayOnTab = false;

  constructor(el: HTMLElement, protected dopts: DiffAppOptions = {}) {
    super(el, dopts, DIFF_TABS, 2);
    this.syncOn = dopts.sync !== false;
    el.classList.add("gw-diff");
    this.summaryEl = h("div", { class: "gw-summary", attrs: { "aria-label": "Summary of the differences" } });
    el.insertBefore(this.summaryEl, this.body);
    this.syncBtn = h("button", { class: "gw-sync", text: "Sync", title: "Pan and zoom both sides together",
      attrs: { type: "button", "data-action": "sync", "aria-pressed": String(this.syncOn) }, on: { click: () => this.setSync(!this.syncOn, true) } });
    this.toolbar.extra.appendChild(this.syncBtn);
    this.toolbar.searchInput.placeholder = "Search both sides…";
  }

  /** Narrow: two panes need the width, so the side panel goes below them (class gw-narrow), never over pane B. */
  protected override narrowChanged(_narrow: boolean): void {}

  protected override attach(): void {
    attachDiffApi(this);
  }

  /** A picture of the diff: the summary sentence above both panes, then the legend. */
  protected override pictureParts(): PictureParts {
    const parts = super.pictureParts();
    return { ...parts, strips: [this.summaryEl, ...parts.strips] };
  }

  override dispose(): void {
    this.summaryWatch.disconnect();
    super.dispose();
  }

  /** Decodes the diff bytes (gzip or plain JSON) or takes a parsed document, and draws both sides. */
  override async load(data: unknown): Promise<void> {
    try {
      const t = performance.now();
      const doc = data && typeof data === "object" && "a" in (data as object) ? normaliseDiff(data) : await decodeDiff(data, this.unpacker, this.timings);
      const models: [GraphModel, GraphModel] = [new GraphModel(doc.a), new GraphModel(doc.b)];
      this.doc = doc;
      this.diff = new DiffModel(doc, models);
      this.timings.decode = performance.now() - t;
      this.summaryText = renderSummary(this.summaryEl, doc);
      // before the panes lay out: a short view folds the numbers, so the panes have their room from the start
      fitSummary(this.summaryEl, this.root.clientHeight);
      this.summaryWatch.observe(this.root);
      await this.show([{ doc: doc.a, label: doc.labels[0] }, { doc: doc.b, label: doc.labels[1] }], models, "");
    } catch (err) {
      this.fail(err);
    }
  }

  /** The diff's panel opens when something is selected (the summary strip already says what changed). */
  protected override openPanel(): void {}

  protected override afterShow(): void {
    const d = this.diff!;
    this.panes.forEach((p, k) => p.setStatus(d.status[k]));
    linkCameras(this.panes, () => this.syncOn);
    this.changes = new ChangesTable(this.doc!, (row) => void this.pickRow(row));
    this.panel.body("changes").replaceChildren(this.changes.el);
    this.findings = diffFindings(this.doc!);
    const [la, lb] = this.doc!.labels;
    this.showFindings([
      { side: 0, label: la, findings: this.findings.a, resolved: this.findings.resolved, resolvedText: `resolved in ${lb}` },
      { side: 1, label: lb, findings: this.findings.b },
    ]);
    // open on where the sides first part: both panes centred on the pair, which is selected (the frontier)
    const div = this.doc!.summary.divergence;
    if (div) void this.selectOn(0, div.a, true, false);
  }

  /** The cause of a picked finding, selected with its counterpart on the other side. */
  protected override async selectFindingNode(side: number, node: number): Promise<void> {
    await this.selectOn(side as Side, this.models[side].nodes[node].id, true, true);
  }

  protected override drawLegend(): void {
    renderLegend(this.legend, this.scale);
    if (this.diff) this.legend.appendChild(renderStatusLegend(this.diff));
    this.appendFindingsLegend(this.doc ? `resolved in ${this.doc.labels[1]}` : undefined);
  }

  protected override statusText(): [string, string] {
    const c = this.diff!.counts;
    return [`${formatCount(c.changed)} changed · ${formatCount(c.added)} added · ${formatCount(c.removed)} removed · ` +
      `${formatCount(c.matched - c.changed)} unchanged`, `Δ${formatCount(c.changed)} +${formatCount(c.added)} −${formatCount(c.removed)}`];
  }

  protected override describeItem(k: number, item: number): string | null {
    const status = this.statusNote(k, item), found = this.findingNote(k, item);
    return status && found ? `${status}\n${found}` : status ?? found;
  }

  private statusNote(k: number, item: number): string | null {
    const p = this.panes[k], d = this.diff;
    const it = p?.view?.items[item];
    if (!it || !d) return null;
    if (!it.cluster) {
      const s = STATUS_NAMES[d.status[k][it.node]];
      if (s === "changed") return `changed: ${d.fieldsOf(k as Side, it.node).join(", ") || "?"}`;
      if (s === "added" || s === "removed") return `${s} (no counterpart)`;
      return null;
    }
    const members: number[] = [];
    this.hiers[k].forEachMember(it.cluster, (i) => members.push(i));
    return statusLine(d.status[k], members, 0);
  }

  // ---- selection: the other side follows ----------------------------------------------------------------

  protected override onPaneSelect(k: number, node: number, user: boolean): void {
    const side = k as Side, other = (1 - k) as Side;
    const d = this.diff!;
    const follow = !user && this.following[side] === node;
    if (follow) this.following[side] = null;
    if (!follow) {
      if (node >= 0) this.focus = side;
      const cp = node >= 0 ? d.counterpart[side][node] : -1;
      const op = this.panes[other];
      if (op.marks.selectedNode !== cp) {
        this.following[other] = cp;
        this.pairDone = op.select(cp, { centre: cp >= 0, user: false });
      }
      const ids: [number | null, number | null] = [null, null];
      ids[side] = d.idOf(side, node);
      ids[other] = d.idOf(other, cp);
      this.dopts.onSelectPair?.(ids[0], ids[1], user);
    }
    this.renderInspector();
    this.findingsTab?.setSelected(side, d.idOf(side, node));
    if (node >= 0) {
      const hidden = this.panel.el.hidden;
      this.revealPanel();
      if ((user || hidden) && !this.stayOnTab && !this.keepTab) this.panel.show("inspector");
    }
  }

  /** Selects node id on a side (null clears both) and centres it and its counterpart; false for an unknown id. */
  async selectOn(side: Side, id: number | null, centre = true, user = false): Promise<boolean> {
    const ok = await this.selectId(id, centre, user, side);
    await this.pairDone;
    if (ok && id !== null && centre) {
      const p = this.panes[side];
      const cp = p.marks.selectedNode >= 0 ? this.diff!.counterpart[side][p.marks.selectedNode] : -1;
      const op = this.panes[1 - side];
      if (cp >= 0 && op.view) op.viewport.centreItem(op.view.rep[cp]);
    }
    return ok;
  }

  /** The node id selected on a side, or null. */
  selectedOn(side: Side): number | null {
    const p = this.panes[side];
    return p && p.marks.selectedNode >= 0 ? this.models[side].nodes[p.marks.selectedNode].id : null;
  }

  override renderInspector(): void {
    const d = this.diff;
    if (!d || this.panes.length < 2) return;
    const f = this.focus, o = (1 - f) as Side;
    const nodes: [number, number] = [-1, -1];
    nodes[f] = this.panes[f].marks.selectedNode;
    nodes[o] = nodes[f] >= 0 ? d.counterpart[f][nodes[f]] : this.panes[o].marks.selectedNode;
    const act = (k: Side) => ({ select: (i: number) => void this.selectOn(k, this.models[k].nodes[i].id, true, true), collapse: (c: Cluster) => void this.panes[k].collapse(c) });
    renderPairInspector(this.panel.body("inspector"), {
      diff: d, labels: this.doc!.labels, hiers: [this.hiers[0], this.hiers[1]], expanded: [this.panes[0].layout.expanded, this.panes[1].layout.expanded],
      side: f, nodes, actions: [act(0), act(1)],
    });
  }

  // ---- Changes tab and Sync -----------------------------------------------------------------------------

  /** A Changes row: all its nodes outlined on both sides, its first node selected (with its counterpart). */
  async pickRow(row: ChangeRow): Promise<void> {
    const [a, b] = this.models;
    const masks = [new Uint8Array(a.n), new Uint8Array(b.n)];
    const put = (k: 0 | 1, id: number) => { const i = this.models[k].indexOf.get(id); if (i !== undefined) masks[k][i] = 1; };
    row.removed.forEach((id) => put(0, id));
    row.added.forEach((id) => put(1, id));
    row.changed.forEach(([x, y]) => { put(0, x); put(1, y); });
    this.markNodes(masks);
    this.stayOnTab = true;
    try {
      if (row.changed.length) await this.selectOn(0, row.changed[0][0], true, true);
      else if (row.removed.length) await this.selectOn(0, row.removed[0], true, true);
      else if (row.added.length) await this.selectOn(1, row.added[0], true, true);
    } finally {
      this.stayOnTab = false;
    }
  }

  setSync(on: boolean, user = false): void {
    this.syncOn = on;
    this.syncBtn.setAttribute("aria-pressed", String(on));
    this.dopts.onSync?.(on, user);
  }
}
