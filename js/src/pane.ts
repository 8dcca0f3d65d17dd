/**
 * One graph pane: canvas, camera, interaction, the current view and its layout. The app holds one pane now and is
 * laid out to hold two side by side (diff view) later; nothing here is global.
 */
import type { GraphModel } from "./data";
import type { Cluster, Hierarchy } from "./grouping";
import { buildView, initialExpansion, type ViewGraph } from "./view";
import { LayoutClient } from "./layout-client";
import { chooseAlgorithm } from "./layout-types";
import { TextMeasurer } from "./measure";
import { KIND_BACKWARD, KIND_CUSTOM, KIND_GROUP, KIND_LEAF, LIGHT, draw, edgeBoxes, edgeDistance2, type Camera, type Paint } from "./render";
import { Minimap } from "./minimap";
import { makeScale, METRICS, type MetricName, type Scale } from "./colour";
import { tooltipLines } from "./tooltip";

export interface PaneEvents {
  /** node index (or -1); user = clicked in this pane rather than set by code */
  select(node: number, user: boolean): void;
  /** after every relayout or recolour */
  changed(): void;
  /** a layout failed; the pane keeps what it showed before */
  error(err: unknown): void;
  /** a relayout started (the drawing is about to change) */
  busy(): void;
}

export interface Timings { view: number; layout: number; draw: number; algorithm: string; worker: string; }

const MIN_SCALE = 0.002;
const MAX_SCALE = 4;

export class GraphPane {
  readonly el: HTMLDivElement;
  readonly canvas: HTMLCanvasElement;
  readonly timings: Timings = { view: 0, layout: 0, draw: 0, algorithm: "", worker: "" };
  view: ViewGraph | null = null;
  expanded: Set<Cluster>;
  scale: Scale;
  selectedNode = -1;
  private ctx: CanvasRenderingContext2D;
  private paint: Paint | null = null;
  private cam: Camera = { s: 1, tx: 0, ty: 0 };
  private cssW = 0;
  private cssH = 0;
  private values: Float64Array;
  private metric: MetricName = "saved_bytes";
  private matches: Uint8Array | null = null;
  private currentMatchNode = -1;
  private layoutSeq = 0;
  private layoutRunning: Promise<void> = Promise.resolve();
  private frame = 0;
  private measurer = new TextMeasurer();
  private layouts = new LayoutClient();
  private minimap: Minimap;
  private tooltip: HTMLDivElement;
  private resize: ResizeObserver;
  private sized: Promise<void>;
  private drawnOnce = false;

  constructor(host: HTMLElement, readonly model: GraphModel, readonly hier: Hierarchy, private events: PaneEvents) {
    this.el = document.createElement("div");
    this.el.className = "gw-pane";
    this.canvas = document.createElement("canvas");
    this.canvas.className = "gw-canvas";
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute("aria-label", "autograd graph: drag to pan, wheel to zoom, click a node to inspect it");
    this.el.appendChild(this.canvas);
    this.tooltip = document.createElement("div");
    this.tooltip.className = "gw-tooltip";
    this.tooltip.hidden = true;
    this.el.appendChild(this.tooltip);
    this.minimap = new Minimap(this.el, (x, y) => this.centreWorld(x, y));
    this.el.appendChild(this.zoomControls());
    host.appendChild(this.el);
    this.ctx = this.canvas.getContext("2d")!;
    this.expanded = initialExpansion(model, hier);
    this.values = new Float64Array(model.n).fill(NaN);
    this.scale = makeScale("none", this.values);
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
    this.bindPointer();
  }

  // ---- view and layout ----------------------------------------------------------------------------------

  /** Rebuilds the view for `expanded`, lays it out in the worker, draws. Anchor keeps a node where it was. */
  relayout(anchor?: { node: number; sx: number; sy: number }): Promise<void> {
    const seq = ++this.layoutSeq;
    this.events.busy();
    const run = () => this.layoutOnce(seq, anchor).catch((err) => this.events.error(err));
    this.layoutRunning = this.layoutRunning.then(run, run);
    return this.layoutRunning;
  }

  private async layoutOnce(seq: number, anchor?: { node: number; sx: number; sy: number }): Promise<void> {
    {
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
      if (seq !== this.layoutSeq) return; // superseded by a newer expand/collapse
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
      this.applyColour();
      this.applyMarks();
      await this.sized;
      if (anchor && view.rep[anchor.node] >= 0) {
        const it = view.items[view.rep[anchor.node]];
        this.cam.tx = anchor.sx - it.x * this.cam.s;
        this.cam.ty = anchor.sy - it.y * this.cam.s;
      } else if (!this.drawnOnce) this.initialView();
      this.minimap.update(view, this.paint.t, this.paint.hot);
      this.drawNow();
      this.drawnOnce = true;
      this.events.changed();
    }
  }

  /** Resolves when the latest relayout has been drawn. */
  idle(): Promise<void> {
    return this.layoutRunning;
  }

  expand(c: Cluster, anchorAtScreen = true): Promise<void> {
    if (this.expanded.has(c)) return this.idle();
    let anchor: { node: number; sx: number; sy: number } | undefined;
    const idx = this.view?.itemOfCluster.get(c.id);
    if (anchorAtScreen && idx !== undefined && this.view) {
      const it = this.view.items[idx];
      let first = -1;
      this.hier.forEachMember(c, (i) => { if (first < 0 || this.model.topo[i] < this.model.topo[first]) first = i; });
      anchor = { node: first, sx: it.x * this.cam.s + this.cam.tx, sy: (it.y - it.h / 2) * this.cam.s + this.cam.ty };
    }
    this.expanded.add(c);
    return this.relayout(anchor);
  }

  collapse(c: Cluster): Promise<void> {
    if (!this.expanded.delete(c)) return this.idle();
    let first = -1;
    this.hier.forEachMember(c, (i) => { if (first < 0 || this.model.topo[i] < this.model.topo[first]) first = i; });
    const it = this.view ? this.view.items[this.view.rep[first]] : null;
    return this.relayout(it ? { node: first, sx: it.x * this.cam.s + this.cam.tx, sy: it.y * this.cam.s + this.cam.ty } : undefined);
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

  // ---- colour, selection, search ------------------------------------------------------------------------

  setMetric(metric: MetricName): void {
    this.metric = metric;
    const def = METRICS[metric];
    for (let i = 0; i < this.model.n; i++) this.values[i] = def.value(this.model.nodes[i]);
    this.scale = makeScale(metric, this.values);
    if (this.paint) { this.applyColour(); this.minimap.update(this.paint.view, this.paint.t, this.paint.hot); this.requestDraw(); }
  }

  /** Groups are coloured by the sum over their members (a group's saved bytes are its nodes' saved bytes). */
  private applyColour(): void {
    const p = this.paint!;
    const sums = new Float64Array(p.view.items.length).fill(NaN);
    const rep = p.view.rep;
    for (let i = 0; i < this.model.n; i++) {
      const v = this.values[i];
      if (!Number.isFinite(v)) continue;
      const r = rep[i];
      sums[r] = Number.isNaN(sums[r]) ? v : sums[r] + v;
    }
    const groups = p.view.items.some((it) => it.cluster);
    // with groups on screen the scale must cover the sums, or every group would be "hot"
    if (groups && this.metric !== "none") this.scale = makeScale(this.metric, sums);
    else this.scale = makeScale(this.metric, this.values);
    for (let k = 0; k < sums.length; k++) {
      p.t[k] = this.metric === "none" ? NaN : this.scale.t(sums[k]);
      p.hot[k] = this.metric !== "none" && sums[k] >= this.scale.hot ? 1 : 0;
    }
  }

  select(node: number, opts: { centre?: boolean; user?: boolean } = {}): Promise<void> {
    const done = async () => {
      if (node >= 0) await this.reveal(node);
      this.selectedNode = node;
      this.applyMarks();
      if (node >= 0 && opts.centre && this.view) this.centreItem(this.view.rep[node]);
      this.requestDraw();
      this.events.select(node, !!opts.user);
    };
    return done();
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

  // ---- camera -------------------------------------------------------------------------------------------

  private bounds(): [number, number, number, number] | null {
    const v = this.view;
    if (!v || !v.items.length || !this.cssW) return null;
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (const it of v.items) {
      x0 = Math.min(x0, it.x - it.w / 2); x1 = Math.max(x1, it.x + it.w / 2);
      y0 = Math.min(y0, it.y - it.h / 2); y1 = Math.max(y1, it.y + it.h / 2);
    }
    return [x0, y0, x1, y1];
  }

  /** The whole view on screen (never magnified past 1.25). */
  fit(): void {
    const b = this.bounds();
    if (!b) return;
    const [x0, y0, x1, y1] = b;
    const pad = 24;
    const s = clamp(Math.min((this.cssW - 2 * pad) / (x1 - x0), (this.cssH - 2 * pad) / (y1 - y0), 1.25), MIN_SCALE, MAX_SCALE);
    this.cam = { s, tx: this.cssW / 2 - ((x0 + x1) / 2) * s, ty: this.cssH / 2 - ((y0 + y1) / 2) * s };
    this.requestDraw();
  }

  /**
   * First view: fit, unless that shrinks the graph into an unreadable sliver (a deep network is a very tall
   * drawing). Then start readable at the top, where the flow begins; the minimap shows the rest.
   */
  initialView(): void {
    this.fit();
    const b = this.bounds();
    if (!b || !this.view || this.cam.s >= 0.3) return;
    const [x0, y0, x1] = b;
    // Start readable at the top. Centre on what is drawn in the first screenful, not on the whole drawing (layered
    // layouts of deep graphs drift sideways, so the middle of the overall bounds can be empty at the top), and zoom
    // out, down to the fitted scale's floor of 0.3, until those top items fit side by side.
    let s = 0.8;
    const yTop = y0 + this.cssH / s;
    let lo = Infinity;
    let hi = -Infinity;
    for (const it of this.view.items) {
      if (it.y > yTop) continue;
      lo = Math.min(lo, it.x - it.w / 2);
      hi = Math.max(hi, it.x + it.w / 2);
    }
    if (!Number.isFinite(lo)) { lo = x0; hi = x1; }
    s = clamp((this.cssW - 48) / Math.max(hi - lo, 1), 0.3, 0.8);
    this.cam = { s, tx: this.cssW / 2 - ((lo + hi) / 2) * s, ty: 24 - y0 * s };
    this.requestDraw();
  }

  centreItem(i: number): void {
    if (!this.view || i < 0) return;
    const it = this.view.items[i];
    // zoom in far enough to read the label, never out
    if (this.cam.s < 0.8) this.cam.s = 0.8;
    this.centreWorld(it.x, it.y);
  }

  centreWorld(x: number, y: number): void {
    this.cam.tx = this.cssW / 2 - x * this.cam.s;
    this.cam.ty = this.cssH / 2 - y * this.cam.s;
    this.requestDraw();
  }

  zoomBy(f: number, sx = this.cssW / 2, sy = this.cssH / 2): void {
    const s = clamp(this.cam.s * f, MIN_SCALE, MAX_SCALE);
    const k = s / this.cam.s;
    this.cam = { s, tx: sx - (sx - this.cam.tx) * k, ty: sy - (sy - this.cam.ty) * k };
    this.requestDraw();
  }

  /** Centre of an item in viewport (client) CSS pixels, or null if it is not drawn. */
  itemClientPosition(i: number): { x: number; y: number } | null {
    if (!this.view || i < 0 || i >= this.view.items.length) return null;
    const it = this.view.items[i];
    const r = this.canvas.getBoundingClientRect();
    return { x: r.left + it.x * this.cam.s + this.cam.tx, y: r.top + it.y * this.cam.s + this.cam.ty };
  }

  /** A point on the drawn edge between two items, in client CSS pixels (for hovering it). */
  edgeClientPosition(a: number, b: number): { x: number; y: number } | null {
    const e = this.view?.edges.find((x) => x.s === a && x.t === b);
    if (!e || !e.points) return null;
    const p = e.points;
    let x: number, y: number;
    if (p.length === 4) { x = (p[0] + p[2]) / 2; y = (p[1] + p[3]) / 2; } // the S-curve is symmetric about its middle
    else { const k = Math.floor(p.length / 4) * 2; x = p[k]; y = p[k + 1]; }
    const r = this.canvas.getBoundingClientRect();
    return { x: r.left + x * this.cam.s + this.cam.tx, y: r.top + y * this.cam.s + this.cam.ty };
  }

  // ---- drawing ------------------------------------------------------------------------------------------

  requestDraw(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.drawNow(); });
  }

  drawNow(): void {
    if (!this.paint || !this.cssW) return;
    const st = draw(this.ctx, this.cam, this.cssW, this.cssH, window.devicePixelRatio || 1, this.paint, LIGHT);
    this.timings.draw = st.ms;
    this.minimap.frame(this.cam, this.cssW, this.cssH);
  }

  // ---- pointer ------------------------------------------------------------------------------------------

  private worldAt(ev: { clientX: number; clientY: number }): [number, number, number, number] {
    const r = this.canvas.getBoundingClientRect();
    const sx = ev.clientX - r.left, sy = ev.clientY - r.top;
    return [(sx - this.cam.tx) / this.cam.s, (sy - this.cam.ty) / this.cam.s, sx, sy];
  }

  hitItem(wx: number, wy: number): number {
    const v = this.view;
    if (!v) return -1;
    const slack = 2 / this.cam.s; // tiny boxes when zoomed out stay clickable
    for (let i = v.items.length - 1; i >= 0; i--) {
      const it = v.items[i];
      if (Math.abs(wx - it.x) <= it.w / 2 + slack && Math.abs(wy - it.y) <= it.h / 2 + slack) return i;
    }
    return -1;
  }

  hitEdge(wx: number, wy: number): number {
    const p = this.paint;
    if (!p || this.cam.s < 0.2) return -1;
    const tol = 5 / this.cam.s;
    let best = -1, bd = tol * tol;
    for (let k = 0; k < p.view.edges.length; k++) {
      const b = p.edgeBox;
      if (wx < b[4 * k] - tol || wx > b[4 * k + 2] + tol || wy < b[4 * k + 1] - tol || wy > b[4 * k + 3] + tol) continue;
      const d = edgeDistance2(p.view.edges[k].points!, wx, wy);
      if (d < bd) { bd = d; best = k; }
    }
    return best;
  }

  private bindPointer(): void {
    const c = this.canvas;
    let down: { x: number; y: number; tx: number; ty: number; id: number } | null = null;
    let moved = false;
    c.addEventListener("pointerdown", (ev) => {
      if (ev.button !== 0) return;
      down = { x: ev.clientX, y: ev.clientY, tx: this.cam.tx, ty: this.cam.ty, id: ev.pointerId };
      moved = false;
      c.setPointerCapture(ev.pointerId);
    });
    c.addEventListener("pointermove", (ev) => {
      if (down) {
        const dx = ev.clientX - down.x, dy = ev.clientY - down.y;
        if (!moved && Math.hypot(dx, dy) < 4) return;
        moved = true;
        this.cam.tx = down.tx + dx;
        this.cam.ty = down.ty + dy;
        this.hideTooltip();
        this.requestDraw();
        return;
      }
      this.hover(ev);
    });
    c.addEventListener("pointerup", (ev) => {
      const wasDown = down;
      down = null;
      if (!wasDown || moved) return;
      const [wx, wy] = this.worldAt(ev);
      const i = this.hitItem(wx, wy);
      if (i < 0) { void this.select(-1, { user: true }); return; }
      const it = this.view!.items[i];
      if (it.cluster) void this.expand(it.cluster);
      else void this.select(it.node, { user: true });
    });
    c.addEventListener("pointerleave", () => { this.setHover(-1, -1); this.hideTooltip(); });
    c.addEventListener("wheel", (ev) => {
      ev.preventDefault();
      const [, , sx, sy] = this.worldAt(ev);
      const f = Math.exp(-ev.deltaY * (ev.deltaMode === 1 ? 0.05 : 0.0015));
      this.zoomBy(f, sx, sy);
    }, { passive: false });
    c.addEventListener("dblclick", (ev) => {
      const [wx, wy] = this.worldAt(ev);
      if (this.hitItem(wx, wy) < 0) this.fit();
    });
    c.addEventListener("keydown", (ev) => {
      if (ev.key === "f") this.fit();
      else if (ev.key === "+" || ev.key === "=") this.zoomBy(1.25);
      else if (ev.key === "-") this.zoomBy(0.8);
      else if (ev.key === "Escape") void this.select(-1, { user: true });
      else return;
      ev.preventDefault();
    });
  }

  private hover(ev: PointerEvent): void {
    const [wx, wy, sx, sy] = this.worldAt(ev);
    const i = this.hitItem(wx, wy);
    const e = i < 0 ? this.hitEdge(wx, wy) : -1;
    this.setHover(i, e);
    const lines = i >= 0 ? tooltipLines.item(this.model, this.hier, this.view!.items[i], this.values, this.metric)
      : e >= 0 ? tooltipLines.edge(this.model, this.view!.edges[e], this.view!) : null;
    if (!lines) { this.hideTooltip(); return; }
    this.tooltip.replaceChildren(...lines.map((l, k) => {
      const d = document.createElement("div");
      d.textContent = l;
      if (k === 0) d.className = "gw-tooltip-title";
      return d;
    }));
    this.tooltip.hidden = false;
    const left = Math.min(sx + 14, this.cssW - this.tooltip.offsetWidth - 4);
    const top = sy + 16 + this.tooltip.offsetHeight > this.cssH ? sy - this.tooltip.offsetHeight - 8 : sy + 16;
    this.tooltip.style.transform = `translate(${Math.max(0, left)}px, ${Math.max(0, top)}px)`;
    this.canvas.style.cursor = i >= 0 ? "pointer" : "grab";
  }

  private setHover(i: number, e: number): void {
    if (!this.paint || (this.paint.hoverItem === i && this.paint.hoverEdge === e)) return;
    this.paint.hoverItem = i;
    this.paint.hoverEdge = e;
    this.requestDraw();
  }

  private hideTooltip(): void {
    this.tooltip.hidden = true;
  }

  private zoomControls(): HTMLElement {
    const box = document.createElement("div");
    box.className = "gw-zoom";
    const mk = (label: string, title: string, fn: () => void) => {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = label;
      b.title = title;
      b.setAttribute("aria-label", title);
      b.addEventListener("click", fn);
      box.appendChild(b);
    };
    mk("+", "Zoom in", () => this.zoomBy(1.3));
    mk("−", "Zoom out", () => this.zoomBy(1 / 1.3));
    mk("⤢", "Fit the graph (f)", () => this.fit());
    return box;
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

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, v));
}
