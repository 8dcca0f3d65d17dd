/**
 * One graph pane: canvas, camera, the current view and its layout, colour and marks. The app holds a row of
 * panes (one for a graph, two side by side for a diff); nothing here is global. Pointer handling is in pointer.ts.
 */
import type { GraphModel } from "../model/graph";
import type { Cluster, Hierarchy } from "../model/grouping";
import { buildView, initialExpansion, sumByItem, type ViewGraph } from "../model/view";
import type { LayoutInput } from "../layout/types";
import { makeScale, METRICS, type MetricName, type Scale } from "../model/colour";
import { LayoutClient } from "../layout/client";
import { chooseAlgorithm } from "../layout/types";
import { SUB_FONT, TextMeasurer, TITLE_FONT } from "./measure";
import { KIND_BACKWARD, KIND_CUSTOM, KIND_GROUP, KIND_LEAF, draw, edgeBoxes, fillOf, type Paint } from "./render";
import { pickTheme, watchTheme, type Theme } from "./theme";
import { itemStatus } from "./marks";
import { Camera } from "./camera";
import { edgeMidpoint, frameBounds, hitEdge, hitFrameTitle, hitItem, openingCamera, readableCamera, viewBounds, type Bounds } from "./geometry";
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

/** Fit shows the whole drawing unless that makes it thinner than this on screen; then it fits across it. */
const MIN_FIT_PX = 60;

/**
 * What a relayout keeps in place on screen: a node (its centre), or the top-left corner of a group, whether it is
 * drawn as a box (`item`) or as a frame (`frame`): opening a group puts its frame where its box was, and back.
 */
type Anchor = { node: number; sx: number; sy: number } | { frame: string; sx: number; sy: number } | { item: string; sx: number; sy: number };

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
  /** the user moved the camera (or code centred something) since the view was last fitted: a resize keeps the
   * centre then, instead of fitting again */
  private moved = false;
  private unwatchTheme: () => void;
  private lastLabels = 0;
  /** groups opened one by one (a click, the API): drawn with a frame even when they are chains or fan-ins */
  private opened = new Set<Cluster>();
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
    const zoom = zoomControls(this);
    zoom.appendChild(this.minimap.button);
    this.minimap.button.addEventListener("click", () => this.requestDraw());
    this.el.appendChild(zoom);
    host.appendChild(this.el);
    this.ctx = this.canvas.getContext("2d")!;
    this.expanded = initialExpansion(model, hier);
    this.values = new Float64Array(model.n).fill(NaN);
    this.scale = makeScale("none", this.values);
    this.camera.on("change", (c) => {
      if (c.reason !== "fit" && c.reason !== "set") this.moved = true;
      this.requestDraw();
    });
    this.sized = watchSize(this.el, (w, h) => this.resized(w, h), (ro) => { this.resize = ro; });
    this.unwatchTheme = watchTheme(this.el, () => this.refreshTheme());
    bindPointer(this);
  }

  /**
   * The pane got a new size (window resized, side panel moved, notebook column changed): the canvas follows; a
   * view the user has not moved is fitted again, otherwise what was in the middle stays in the middle.
   */
  private resized(w: number, h: number): void {
    const oldW = this.cssW, oldH = this.cssH;
    this.cssW = w;
    this.cssH = h;
    const dpr = window.devicePixelRatio || 1;
    this.canvas.width = Math.round(w * dpr);
    this.canvas.height = Math.round(h * dpr);
    if (this.drawnOnce && this.view && (oldW !== w || oldH !== h)) {
      if (!this.moved) this.initialView();
      else {
        const [cx, cy] = this.camera.toWorld(oldW / 2, oldH / 2);
        this.camera.centreOn(cx, cy, w, h, this.camera.s, "set");
      }
      this.placeOverlays();
    }
    this.drawNow();
  }

  /** The theme, read from the page the first time it is needed (canvas and minimap). */
  private ensureTheme(): Theme {
    if (!this.theme) {
      this.theme = pickTheme(this.el);
      this.minimap.setTheme(this.theme);
    }
    return this.theme;
  }

  /** The page's theme changed (JupyterLab theme switch, OS dark mode): new canvas colours. */
  refreshTheme(): void {
    this.theme = pickTheme(this.el);
    this.minimap.setTheme(this.theme);
    if (this.paint) this.minimap.update(this.paint.view, this.paint.t, this.paint.hot, this.paint.status);
    this.requestDraw();
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
    const view = buildView(this.model, this.hier, this.expanded, this.measurer.box, (t) => this.measurer.width(`▾ ${t} · 000.0 KiB`, TITLE_FONT),
      (c) => (c.kind === "chain" || c.kind === "fanin") && !this.opened.has(c));
    const n = view.items.length;
    const input: LayoutInput = {
      w: Float64Array.from(view.items, (it) => it.w),
      h: Float64Array.from(view.items, (it) => it.h),
      src: Int32Array.from(view.edges, (e) => e.s),
      dst: Int32Array.from(view.edges, (e) => e.t),
    };
    if (view.frames.length) {
      input.owner = Int32Array.from(view.items, (it) => it.frame);
      input.fparent = Int32Array.from(view.frames, (f) => f.parent);
      input.fminw = Float64Array.from(view.frames, (f) => f.minW);
    }
    const t1 = performance.now();
    const res = await this.layouts.layout(input);
    if (seq !== this.layoutSeq) { finish(); return; } // superseded by a newer expand/collapse
    for (let i = 0; i < n; i++) { view.items[i].x = res.x[i]; view.items[i].y = res.y[i]; }
    if (res.fx) view.frames.forEach((f, k) => { f.x = res.fx![k]; f.y = res.fy![k]; f.w = res.fw![k]; f.h = res.fh![k]; });
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
      sub: view.items.map((it) => it.ds), ftitle: view.frames.map((f) => `▾ ${f.title}`), ft: new Float64Array(view.frames.length),
      hoverFrame: -1, fitted: new Map(),
    };
    this.applyStatus();
    this.recolour();
    this.applyMarks();
    await this.sized;
    const at = anchor ? this.anchorPoint(view, anchor) : null;
    if (anchor && at) this.camera.set(this.camera.s, anchor.sx - at[0] * this.camera.s, anchor.sy - at[1] * this.camera.s, "anchor");
    else if (!this.drawnOnce) this.initialView();
    this.placeOverlays();
    this.drawNow();
    this.drawnOnce = true;
    finish();
    this.events.changed();
  }

  /** Resolves when the latest relayout has been drawn. */
  idle(): Promise<void> {
    return this.layoutRunning;
  }

  /** The world point an anchor refers to in a new view, or null if it is not drawn there. */
  private anchorPoint(view: ViewGraph, a: Anchor): [number, number] | null {
    if ("node" in a) {
      const r = view.rep[a.node];
      return r >= 0 ? [view.items[r].x, view.items[r].y] : null;
    }
    if ("frame" in a) {
      const f = view.frameOfCluster.get(a.frame);
      if (f === undefined) return null;
      const fr = view.frames[f];
      return [fr.x - fr.w / 2, fr.y - fr.h / 2];
    }
    const i = view.itemOfCluster.get(a.item);
    if (i === undefined) return null;
    const it = view.items[i];
    return [it.x - it.w / 2, it.y - it.h / 2];
  }

  /** Opens a group: its frame takes the place of its box (the top-left corner stays where it was on screen). */
  expand(c: Cluster, anchorAtScreen = true): Promise<void> {
    if (this.expanded.has(c)) return this.idle();
    let anchor: Anchor | undefined;
    const idx = this.view?.itemOfCluster.get(c.id);
    if (anchorAtScreen && idx !== undefined && this.view) {
      const it = this.view.items[idx];
      const [sx, sy] = this.camera.toScreen(it.x - it.w / 2, it.y - it.h / 2);
      anchor = { frame: c.id, sx, sy };
    }
    this.expanded.add(c);
    this.opened.add(c);
    return this.relayout(anchor);
  }

  /** Closes a group (from its frame's title, the Inspector or the API): its box takes the place of its frame. */
  collapse(c: Cluster): Promise<void> {
    if (!this.expanded.delete(c)) return this.idle();
    const f = this.view?.frameOfCluster.get(c.id);
    if (f === undefined || !this.view) return this.relayout();
    const fr = this.view.frames[f];
    const [sx, sy] = this.camera.toScreen(fr.x - fr.w / 2, fr.y - fr.h / 2);
    return this.relayout({ item: c.id, sx, sy });
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
    this.costLabels(sums);
    this.ensureTheme();
    this.minimap.update(p.view, p.t, p.hot, p.status);
    this.requestDraw();
  }

  /**
   * A group's cost in the colour metric goes on its box ("module · 49 ops · 1.2 MiB") and on its frame's title
   * when it is open, so the first view of a model says where the cost is before anything is clicked.
   */
  private costLabels(sums: Float64Array): void {
    const p = this.paint!;
    const v = p.view;
    const def = METRICS[this.metric];
    const none = this.metric === "none";
    const cost = (x: number) => (none || !Number.isFinite(x) ? "" : def.format(x));
    v.items.forEach((it, k) => {
      if (!it.cluster) return;
      const c = cost(sums[k]);
      p.sub[k] = c ? this.measurer.fit(`${it.sublabel} · ${c}`, SUB_FONT, it.w - 20 - 18) : it.ds;
    });
    if (!v.frames.length) return;
    const fsum = new Float64Array(v.frames.length).fill(NaN);
    v.items.forEach((it, k) => {
      if (!Number.isFinite(sums[k])) return;
      for (let f = it.frame; f >= 0; f = v.frames[f].parent) fsum[f] = Number.isNaN(fsum[f]) ? sums[k] : fsum[f] + sums[k];
    });
    v.frames.forEach((fr, f) => {
      const c = cost(fsum[f]);
      p.ft[f] = none ? NaN : this.scale.t(fsum[f]);
      p.ftitle[f] = this.measurer.fit(`▾ ${fr.title}${c ? ` · ${c}` : ""}`, TITLE_FONT, fr.w - 16);
    });
    p.fitted.clear();
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
    if (!b) return;
    const c = Camera.fitBounds(b, this.cssW, this.cssH);
    const bw = b[2] - b[0], bh = b[3] - b[1];
    if (Math.min(bw * c.s, bh * c.s) >= MIN_FIT_PX) this.camera.set(c.s, c.tx, c.ty, "fit");
    else if (bh > bw) {
      // a sliver (a deep network opened whole): fit across it and start where the flow begins, not a line
      const s = Math.min(1.25, (this.cssW - 48) / Math.max(bw, 1));
      this.camera.set(s, this.cssW / 2 - ((b[0] + b[2]) / 2) * s, 24 - b[1] * s, "fit");
    } else {
      const s = Math.min(1.25, (this.cssH - 48) / Math.max(bh, 1));
      this.camera.set(s, 24 - b[0] * s, this.cssH / 2 - ((b[1] + b[3]) / 2) * s, "fit");
    }
    this.moved = false;
  }

  /** The opening camera: fitted, or readable at the top of a tall drawing. */
  initialView(): void {
    const c = this.view && this.cssW ? openingCamera(this.view, this.cssW, this.cssH) : null;
    if (c) this.camera.set(c.s, c.tx, c.ty, "fit");
    this.moved = false;
  }

  /** Centres a drawn item, zooming in far enough to read its label (never out). */
  centreItem(i: number): void {
    if (!this.view || i < 0) return;
    const it = this.view.items[i];
    this.camera.centreOn(it.x, it.y, this.cssW, this.cssH, Math.max(this.camera.s, 0.8), "centre");
  }

  /** Shows an open group's frame: whole if it is readable so, else readable from its title down. */
  centreFrame(f: number): void {
    if (!this.view || f < 0 || f >= this.view.frames.length || !this.cssW) return;
    const c = readableCamera(this.view, frameBounds(this.view, f), this.cssW, this.cssH);
    this.camera.set(c.s, c.tx, c.ty, "centre");
  }

  /** Centre of an open group's frame in client CSS pixels, or null. */
  frameClientPosition(f: number): { x: number; y: number } | null {
    if (!this.view || f < 0 || f >= this.view.frames.length) return null;
    const fr = this.view.frames[f];
    const r = this.canvas.getBoundingClientRect();
    const [x, y] = this.camera.toScreen(fr.x, fr.y);
    return { x: r.left + x, y: r.top + y };
  }

  /** A world rectangle in client CSS pixels: {left, top, right, bottom}. */
  clientRect(b: Bounds): { left: number; top: number; right: number; bottom: number } {
    const r = this.canvas.getBoundingClientRect();
    const [x0, y0] = this.camera.toScreen(b[0], b[1]);
    const [x1, y1] = this.camera.toScreen(b[2], b[3]);
    return { left: r.left + x0, top: r.top + y0, right: r.left + x1, bottom: r.top + y1 };
  }

  /** Labels drawn in the last frame (node and group labels, frame titles). */
  get labelCount(): number {
    return this.lastLabels;
  }

  /**
   * Keeps the minimap out of the drawing's way: hidden when the whole drawing is on screen (nothing to navigate),
   * folded to its button when it would cover a node; the user's own choice (its button) wins from then on.
   */
  placeOverlays(): void {
    const v = this.view;
    if (!v || !this.cssW) return;
    const b = viewBounds(v);
    const whole = !b || (this.camera.toScreen(b[0], b[1])[0] >= -1 && this.camera.toScreen(b[0], b[1])[1] >= -1 &&
      this.camera.toScreen(b[2], b[3])[0] <= this.cssW + 1 && this.camera.toScreen(b[2], b[3])[1] <= this.cssH + 1);
    if (whole) { this.minimap.auto(false); return; }
    const m = this.minimap.rectIn(this.el);
    const covers = !!m && v.items.some((it) => {
      const [x0, y0] = this.camera.toScreen(it.x - it.w / 2, it.y - it.h / 2);
      const [x1, y1] = this.camera.toScreen(it.x + it.w / 2, it.y + it.h / 2);
      return x0 < m.right && m.left < x1 && y0 < m.bottom && m.top < y1;
    });
    this.minimap.auto(!covers);
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
    const theme = this.ensureTheme();
    const st = draw(this.ctx, this.camera, this.cssW, this.cssH, window.devicePixelRatio || 1, this.paint, theme);
    this.lastLabels = st.labels;
    // finding badges: on top, at a fixed screen size (badges.ts)
    this.badges = this.findings ? drawFindingBadges(this.ctx, this.camera, this.cssW, this.cssH, window.devicePixelRatio || 1, this.paint.view, this.findings, theme) : [];
    this.timings.draw = st.ms;
    this.minimap.frame(this.camera, this.cssW, this.cssH);
  }

  hitItem(wx: number, wy: number): number {
    return this.view ? hitItem(this.view, this.camera.s, wx, wy) : -1;
  }

  hitEdge(wx: number, wy: number): number {
    return this.paint ? hitEdge(this.paint.view, this.paint.edgeBox, this.camera.s, wx, wy) : -1;
  }

  /** The open group whose frame title is under a world point, or -1 (a click there collapses it). */
  hitFrameTitle(wx: number, wy: number): number {
    return this.view ? hitFrameTitle(this.view, this.camera.s, wx, wy) : -1;
  }

  setHoverFrame(f: number): void {
    if (!this.paint || this.paint.hoverFrame === f) return;
    this.paint.hoverFrame = f;
    this.requestDraw();
  }

  dispose(): void {
    this.unwatchTheme();
    this.resize.disconnect();
    this.layouts.dispose();
    if (this.frame) cancelAnimationFrame(this.frame);
    this.el.remove();
  }
}

function kindCode(kind: string): number {
  return kind === "leaf" ? KIND_LEAF : kind === "custom" ? KIND_CUSTOM : KIND_BACKWARD;
}
