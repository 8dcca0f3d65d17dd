/**
 * One graph pane: canvas, camera, the current view and its layout, colour and marks. The app holds a row of
 * panes (one for a graph, two side by side for a diff); nothing here is global. Pointer handling is in pointer.ts.
 */
import type { GraphModel } from "../model/graph";
import type { Cluster, Hierarchy } from "../model/grouping";
import { buildView, initialExpansion, type ViewGraph } from "../model/view";
import { makeScale, METRICS, type MetricName, type Scale } from "../model/colour";
import { LayoutClient } from "../layout/client";
import { chooseAlgorithm } from "../layout/types";
import { TextMeasurer } from "./measure";
import { KIND_BACKWARD, KIND_CUSTOM, KIND_GROUP, KIND_LEAF, LIGHT, draw, edgeBoxes, type Paint } from "./render";
import { Camera } from "./camera";
import { edgeMidpoint, hitEdge, hitItem, openingCamera, viewBounds } from "./geometry";
import { Minimap } from "./minimap";
import { bindPointer, zoomControls } from "./pointer";

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
  private layouts = new LayoutClient();
  private minimap: Minimap;
  private resize: ResizeObserver;
  private sized: Promise<void>;
  private drawnOnce = false;

  constructor(host: HTMLElement, readonly model: GraphModel, readonly hier: Hierarchy, private events: PaneEvents, title: string | null = null) {
    this.el = document.createElement("div");
    this.el.className = "gw-pane";
    this.canvas = document.createElement("canvas");
    this.canvas.className = "gw-canvas";
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute("aria-label", `${title ? `${title}: ` : ""}autograd graph: drag to pan, wheel to zoom, click a node to inspect it`);
    this.el.appendChild(this.canvas);
    if (title !== null) {
      const t = document.createElement("div");
      t.className = "gw-pane-title";
      t.textContent = title;
      t.title = title;
      this.el.appendChild(t);
    }
    this.tooltip = document.createElement("div");
    this.tooltip.className = "gw-tooltip";
    this.tooltip.hidden = true;
    this.el.appendChild(this.tooltip);
    this.minimap = new Minimap(this.el, (x, y) => this.camera.centreOn(x, y, this.cssW, this.cssH, this.camera.s, "pan"));
    this.el.appendChild(zoomControls(this));
    host.appendChild(this.el);
    this.ctx = this.canvas.getContext("2d")!;
    this.expanded = initialExpansion(model, hier);
    this.values = new Float64Array(model.n).fill(NaN);
    this.scale = makeScale("none", this.values);
    this.camera.on("change", () => this.requestDraw());
    let markSized: () => void = () => {};
    this.sized = new Promise((r) => { markSized = r; });
    this.resize = new ResizeObserver(() => {
      const r = this.el.getBoundingClientRect();
      if (r.width < 2 || r.height < 2) return;
      const first = !this.cssW;
      this.cssW = r.width;
      this.cssH = r.height;
      const dpr = window.devicePixelRatio || 1;
      this.canvas.width = Math.round(r.width * dpr);
      this.canvas.height = Math.round(r.height * dpr);
      if (first) markSized();
      this.drawNow();
    });
    this.resize.observe(this.el);
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
      selected: -1, hoverItem: -1, hoverEdge: -1, matches: null, currentMatch: -1,
    };
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

  /** Sets the metric's per-node values; the colours follow through recolour (the owner's shared scale). */
  setMetric(metric: MetricName): void {
    this.metric = metric;
    const def = METRICS[metric];
    for (let i = 0; i < this.model.n; i++) this.values[i] = def.value(this.model.nodes[i]);
    this.recolour();
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
    const p = this.paint;
    if (!p) return null;
    const sums = new Float64Array(p.view.items.length).fill(NaN);
    const rep = p.view.rep;
    for (let i = 0; i < this.model.n; i++) {
      const v = this.values[i];
      if (!Number.isFinite(v)) continue;
      const r = rep[i];
      sums[r] = Number.isNaN(sums[r]) ? v : sums[r] + v;
    }
    return sums;
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
    this.minimap.update(p.view, p.t, p.hot);
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
    const st = draw(this.ctx, this.camera, this.cssW, this.cssH, window.devicePixelRatio || 1, this.paint, LIGHT);
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
