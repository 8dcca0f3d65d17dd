/**
 * One graph pane: canvas, camera, the current view and its layout, colour and marks. The app holds a row of
 * panes (one for a graph, two side by side for a diff); nothing here is global. Pointer handling is in pointer.ts.
 */
import type { GraphModel } from "../model/graph";
import type { Cluster, Hierarchy } from "../model/grouping";
import { buildView, initialExpansion, sumByItem, type ViewGraph } from "../model/view";
import { makeScale, METRICS, type MetricName, type Scale } from "../model/colour";
import { LayoutClient } from "../layout/client";
import { chooseAlgorithm } from "../layout/types";
import { TextMeasurer } from "./measure";
import { KIND_BACKWARD, KIND_CUSTOM, KIND_GROUP, KIND_LEAF, draw, edgeBoxes, fillOf, type Paint } from "./render";
import { pickTheme, type Theme } from "./theme";
import { itemStatus } from "./marks";
import { Camera } from "./camera";
import { edgeMidpoint, hitEdge, hitItem, openingCamera, viewBounds } from "./geometry";
import { Minimap } from "./minimap";
import { bindPointer, paneElements, watchSize, zoomControls } from "./pointer";
import { drawFindingBadges, type DrawnBadge } from "./badges";
import type { FindingMarks } from "../model/findings";

export interface PaneEvents {
  /** node index (or -1); user = clicked in this pane rather than set by code */
  select(node: number, user: boolean): void;
  /** after every relayout */
  changed(): void;
  /** a layout failed; the pane keeps what it showed before */
  error(err: unknown): void;
  /** a relayout started (the drawing is about to change) */
  busy(): void;
  /**
   * The drawn items changed: the owner computes the colour scale (shared by all its panes) and calls applyScale.
   * Without it the pane scales its own values.
   */
  recolour?(): void;
  /** an extra tooltip line for a drawn item (the diff view's status), or null */
  describe?(item: number): string | null;
}

export interface Timings { view: number; layout: number; draw: number; algorithm: string; worker: string; }

type Anchor = { node: number; sx: number; sy: number };

export class GraphPane {
  readonly el: HTMLDivElement;
  readonly canvas: HTMLCanvasElement;
  readonly tooltip: HTMLDivElement;
  readonly camera = new Camera();
  readonly timings: Timings = { view: 0, layout: 0, draw: 0, algorithm: "", worker: "" };
  view: ViewGraph | null = null;
  expanded: Set<Cluster>;
  scale: Scale;
  selectedNode = -1;
  /** per node: the value of the colour metric (NaN = none) */
  readonly values: Float64Array;
  metric: MetricName = "saved_bytes";
  private ctx: CanvasRenderingContext2D;
  private paint: Paint | null = null;
  private cssW = 0;
  private cssH = 0;
  private matches: Uint8Array | null = null;
  private currentMatchNode = -1;
  private layoutSeq = 0;
  /** relayouts asked for and relayouts finished (drawn, superseded or failed) */
  private started = 0;
  private finished = 0;
  private layoutRunning: Promise<void> = Promise.resolve();
  private frame = 0;
  private measurer = new TextMeasurer();
  private layouts: LayoutClient;
  private minimap: Minimap;
  private resize!: ResizeObserver;
  private sized: Promise<void>;
  private drawnOnce = false;
  private theme: Theme | null = null;
  /** per node: diff status code (diff/model.ts), or null outside a diff */
  private nodeStatus: Uint8Array | null = null;
  /** the advisor's findings on this pane's nodes (badges), or null */
  findings: FindingMarks | null = null;
  /** the finding badges of the last frame, in canvas CSS pixels */
  badges: DrawnBadge[] = [];

  /** `layouts`: a layout worker started early (while the data decodes), else the pane starts its own. */
  constructor(host: HTMLElement, readonly model: GraphModel, readonly hier: Hierarchy, private events: PaneEvents,
    title: string | null = null, layouts?: LayoutClient) {
    this.layouts = layouts ?? new LayoutClient();
    ({ el: this.el, canvas: this.canvas, tooltip: this.tooltip } = paneElements(title));
    this.minimap = new Minimap(this.el, (x, y) => this.camera.centreOn(x, y, this.cssW, this.cssH, this.camera.s, "pan"));
    this.el.appendChild(zoomControls(this));
    host.appendChild(this.el);
    this.ctx = this.canvas.getContext("2d")!;
    this.expanded = initialExpansion(model, hier);
    this.values = new Float64Array(model.n).fill(NaN);
    this.scale = makeScale("none", this.values);
    this.camera.on("change", () => this.requestDraw());
    this.sized = watchSize(this.el, (w, h) => {
      this.cssW = w;
      this.cssH = h;
      const dpr = window.devicePixelRatio || 1;
      this.canvas.width = Math.round(w * dpr);
      this.canvas.height = Math.round(h * dpr);
      this.drawNow();
    }, (ro) => { this.resize = ro; });
    bindPointer(this);
  }

  /** The pane's size in CSS pixels (0 × 0 until it is laid out by the page). */
  get size(): { width: number; height: number } {
    return { width: this.cssW, height: this.cssH };
  }

  // ---- view and layout ----------------------------------------------------------------------------------

  /** Rebuilds the view for `expanded`, lays it out in the worker, draws. Anchor keeps a node where it was. */
  relayout(anchor?: Anchor): Promise<void> {
    const seq = ++this.layoutSeq;
    this.started++;
    this.events.busy();
    let counted = false;
    const finish = () => { if (!counted) { counted = true; this.finished++; } };
    const run = () => this.layoutOnce(seq, finish, anchor).catch((err) => { finish(); this.events.error(err); });
    this.layoutRunning = this.layoutRunning.then(run, run);
    return this.layoutRunning;
  }

  /** True while a relayout is queued or running. */
  get busy(): boolean {
    return this.started !== this.finished;
  }

  private async layoutOnce(seq: number, finish: () => void, anchor?: Anchor): Promise<void> {
    const t0 = performance.now();
    const view = buildView(this.model, this.hier, this.expanded, this.measurer.box);
    const n = view.items.length;
    const input = {
      w: Float64Array.from(view.items, (it) => it.w),
      h: Float64Array.from(view.items, (it) => it.h),
      src: Int32Array.from(view.edges, (e) => e.s),
      dst: Int32Array.from(view.edges, (e) => e.t),
    };
    const t1 = performance.now();
    const res = await this.layouts.layout(input);
    if (seq !== this.layoutSeq) { finish(); return; } // superseded by a newer expand/collapse
    for (let i = 0; i < n; i++) { view.items[i].x = res.x[i]; view.items[i].y = res.y[i]; }
    view.edges.forEach((e, k) => { e.points = res.pts.slice(res.ptOff[k], res.ptOff[k + 1]); });
    this.timings.view = t1 - t0;
    this.timings.layout = performance.now() - t1;
    this.timings.algorithm = res.algorithm || chooseAlgorithm(input);
    this.timings.worker = this.layouts.mode;
    this.view = view;
    this.paint = {
      view, edgeBox: edgeBoxes(view), t: new Float64Array(n), hot: new Uint8Array(n),
      kind: Uint8Array.from(view.items, (it) => (it.cluster ? KIND_GROUP : kindCode(this.model.nodes[it.node].kind))),
      selected: -1, hoverItem: -1, hoverEdge: -1, matches: null, currentMatch: -1, status: null, statusCount: null,
    };
    this.applyStatus();
    this.recolour();
    this.applyMarks();
    await this.sized;
    if (anchor && view.rep[anchor.node] >= 0) {
      const it = view.items[view.rep[anchor.node]];
      this.camera.set(this.camera.s, anchor.sx - it.x * this.camera.s, anchor.sy - it.y * this.camera.s, "anchor");
    } else if (!this.drawnOnce) this.initialView();
    this.drawNow();
    this.drawnOnce = true;
    finish();
    this.events.changed();
  }

  /** Resolves when the latest relayout has been drawn. */
  idle(): Promise<void> {
    return this.layoutRunning;
  }

  /** The topologically first member of a cluster (the node a relayout keeps in place). */
  private firstMember(c: Cluster): number {
    let first = -1;
    this.hier.forEachMember(c, (i) => { if (first < 0 || this.model.topo[i] < this.model.topo[first]) first = i; });
    return first;
  }

  expand(c: Cluster, anchorAtScreen = true): Promise<void> {
    if (this.expanded.has(c)) return this.idle();
    let anchor: Anchor | undefined;
    const idx = this.view?.itemOfCluster.get(c.id);
    if (anchorAtScreen && idx !== undefined && this.view) {
      const it = this.view.items[idx];
      const [sx, sy] = this.camera.toScreen(it.x, it.y - it.h / 2);
      anchor = { node: this.firstMember(c), sx, sy };
    }
    this.expanded.add(c);
    return this.relayout(anchor);
  }

  collapse(c: Cluster): Promise<void> {
    if (!this.expanded.delete(c)) return this.idle();
    const first = this.firstMember(c);
    const it = this.view ? this.view.items[this.view.rep[first]] : null;
    if (!it) return this.relayout();
    const [sx, sy] = this.camera.toScreen(it.x, it.y);
    return this.relayout({ node: first, sx, sy });
  }

  setExpanded(set: Set<Cluster>): Promise<void> {
    this.expanded = set;
    this.drawnOnce = false; // a wholesale change: fit again
    return this.relayout();
  }

  /** Expands every cluster enclosing node i; resolves after the relayout (immediately if nothing changed). */
  reveal(i: number): Promise<void> {
    const hidden = this.hier.ancestors(i).filter((c) => !this.expanded.has(c));
    if (!hidden.length) return this.idle();
    hidden.forEach((c) => this.expanded.add(c));
    return this.relayout();
  }

  // ---- colour -------------------------------------------------------------------------------------------

  /** Sets the metric's per-node values; the colours follow through recolour (the owner's shared scale), unless the
   * owner recolours itself once it has set every pane. */
  setMetric(metric: MetricName, recolour = true): void {
    this.metric = metric;
    const def = METRICS[metric];
    for (let i = 0; i < this.model.n; i++) this.values[i] = def.value(this.model.nodes[i]);
    if (recolour) this.recolour();
  }

  private recolour(): void {
    if (this.events.recolour) this.events.recolour();
    else this.applyScale(this.ownScale());
  }

  /**
   * The metric per drawn item: a node's value, a group's sum over its members (a group's saved bytes are its
   * nodes' saved bytes); null before the first layout.
   */
  itemSums(): Float64Array | null {
    return this.paint ? sumByItem(this.paint.view.rep, this.paint.view.items.length, this.values) : null;
  }

  /** This pane's scale alone: over the group sums when groups are drawn, or every group would be "hot". */
  ownScale(): Scale {
    const sums = this.itemSums();
    const groups = !!this.paint && this.paint.view.items.some((it) => it.cluster);
    return groups && sums && this.metric !== "none" ? makeScale(this.metric, sums) : makeScale(this.metric, this.values);
  }

  /** Colours the drawn items on `scale` (possibly shared with other panes). */
  applyScale(scale: Scale): void {
    this.scale = scale;
    const p = this.paint;
    if (!p) return;
    const sums = this.itemSums()!;
    const none = this.metric === "none";
    for (let k = 0; k < sums.length; k++) {
      p.t[k] = none ? NaN : scale.t(sums[k]);
      p.hot[k] = !none && sums[k] >= scale.hot ? 1 : 0;
    }
    this.minimap.update(p.view, p.t, p.hot, p.status);
    this.requestDraw();
  }

  /** Diff status per node (changed, added, removed are marked; groups holding them too); null clears. */
  setStatus(codes: Uint8Array | null): void {
    this.nodeStatus = codes;
    if (!this.paint) return;
    this.applyStatus();
    this.minimap.update(this.paint.view, this.paint.t, this.paint.hot, this.paint.status);
    this.requestDraw();
  }

  private applyStatus(): void {
    const p = this.paint!;
    const s = this.nodeStatus ? itemStatus(p.view, this.nodeStatus) : null;
    p.status = s ? s.status : null;
    p.statusCount = s ? s.count : null;
  }

  /** The advisor's findings to badge on this pane's nodes and groups (null: none). */
  setFindings(marks: FindingMarks | null): void {
    this.findings = marks;
    this.requestDraw();
  }

  // ---- selection, search --------------------------------------------------------------------------------

  async select(node: number, opts: { centre?: boolean; user?: boolean } = {}): Promise<void> {
    if (node >= 0) await this.reveal(node);
    this.selectedNode = node;
    this.applyMarks();
    if (node >= 0 && opts.centre && this.view) this.centreItem(this.view.rep[node]);
    this.requestDraw();
    this.events.select(node, !!opts.user);
  }

  setSearch(mask: Uint8Array | null, current: number): void {
    this.matches = mask;
    this.currentMatchNode = current;
    this.applyMarks();
    this.requestDraw();
  }

  private applyMarks(): void {
    const p = this.paint;
    if (!p) return;
    const rep = p.view.rep;
    p.selected = this.selectedNode >= 0 ? rep[this.selectedNode] : -1;
    p.currentMatch = this.currentMatchNode >= 0 ? rep[this.currentMatchNode] : -1;
    if (this.matches) {
      const m = new Uint8Array(p.view.items.length);
      for (let i = 0; i < this.model.n; i++) if (this.matches[i]) m[rep[i]] = 1;
      p.matches = m;
    } else p.matches = null;
  }

  setHover(i: number, e: number): void {
    if (!this.paint || (this.paint.hoverItem === i && this.paint.hoverEdge === e)) return;
    this.paint.hoverItem = i;
    this.paint.hoverEdge = e;
    this.requestDraw();
  }

  /** The fill colour of a drawn item (the shared colour scale), or null if it is not drawn. */
  itemColour(i: number): string | null {
    return this.paint && i >= 0 && i < this.paint.t.length ? fillOf(this.paint.t[i]) : null;
  }

  tooltipExtra(item: number): string | null {
    return this.events.describe ? this.events.describe(item) : null;
  }

  // ---- camera -------------------------------------------------------------------------------------------

  /** The whole view on screen (never magnified past 1.25). */
  fit(): void {
    const b = this.view && this.cssW ? viewBounds(this.view) : null;
    if (b) this.camera.fit(b, this.cssW, this.cssH);
  }

  /** The opening camera: fitted, or readable at the top of a tall drawing. */
  initialView(): void {
    const c = this.view && this.cssW ? openingCamera(this.view, this.cssW, this.cssH) : null;
    if (c) this.camera.set(c.s, c.tx, c.ty, "fit");
  }

  /** Centres a drawn item, zooming in far enough to read its label (never out). */
  centreItem(i: number): void {
    if (!this.view || i < 0) return;
    const it = this.view.items[i];
    this.camera.centreOn(it.x, it.y, this.cssW, this.cssH, Math.max(this.camera.s, 0.8), "centre");
  }

  zoomBy(f: number, sx = this.cssW / 2, sy = this.cssH / 2): void {
    this.camera.zoomAt(f, sx, sy);
  }

  /** Centre of an item in viewport (client) CSS pixels, or null if it is not drawn. */
  itemClientPosition(i: number): { x: number; y: number } | null {
    if (!this.view || i < 0 || i >= this.view.items.length) return null;
    const it = this.view.items[i];
    const r = this.canvas.getBoundingClientRect();
    const [x, y] = this.camera.toScreen(it.x, it.y);
    return { x: r.left + x, y: r.top + y };
  }

  /** A point on the drawn edge between two items, in client CSS pixels (for hovering it). */
  edgeClientPosition(a: number, b: number): { x: number; y: number } | null {
    const m = this.view ? edgeMidpoint(this.view, a, b) : null;
    if (!m) return null;
    const r = this.canvas.getBoundingClientRect();
    const [sx, sy] = this.camera.toScreen(m[0], m[1]);
    return { x: r.left + sx, y: r.top + sy };
  }

  // ---- drawing and hit testing --------------------------------------------------------------------------

  requestDraw(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.drawNow(); });
  }

  drawNow(): void {
    if (this.frame) { cancelAnimationFrame(this.frame); this.frame = 0; }
    if (!this.paint || !this.cssW) return;
    this.theme ??= pickTheme(this.el);
    const st = draw(this.ctx, this.camera, this.cssW, this.cssH, window.devicePixelRatio || 1, this.paint, this.theme);
    // finding badges: on top, at a fixed screen size (badges.ts)
    this.badges = this.findings ? drawFindingBadges(this.ctx, this.camera, this.cssW, this.cssH, window.devicePixelRatio || 1, this.paint.view, this.findings, this.theme) : [];
    this.timings.draw = st.ms;
    this.minimap.frame(this.camera, this.cssW, this.cssH);
  }

  hitItem(wx: number, wy: number): number {
    return this.view ? hitItem(this.view, this.camera.s, wx, wy) : -1;
  }

  hitEdge(wx: number, wy: number): number {
    return this.paint ? hitEdge(this.paint.view, this.paint.edgeBox, this.camera.s, wx, wy) : -1;
  }

  dispose(): void {
    this.resize.disconnect();
    this.layouts.dispose();
    if (this.frame) cancelAnimationFrame(this.frame);
    this.el.remove();
  }
}

function kindCode(kind: string): number {
  return kind === "leaf" ? KIND_LEAF : kind === "custom" ? KIND_CUSTOM : KIND_BACKWARD;
}
