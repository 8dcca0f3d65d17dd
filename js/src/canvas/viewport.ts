/**
 * Where a pane looks: its camera, fitting and centring, the opening view, what a relayout or a resize keeps in
 * place on screen, the minimap (and keeping it out of the drawing's way), and world ↔ client coordinates.
 */
import type { ViewGraph } from "../model/view";
import { Camera } from "./camera";
import { edgeMidpoint, fitClear, frameBounds, readableCamera, viewBounds, type Bounds } from "./geometry";
import { Minimap } from "./minimap";
import type { Paint } from "./render";
import type { PaneSurface } from "./surface";

/**
 * What a relayout keeps in place on screen: a node (its centre), or the top-left corner of a group, whether it is
 * drawn as a box (`item`) or as a frame (`frame`): opening a group puts its frame where its box was, and back.
 */
export type Anchor = { node: number; sx: number; sy: number } | { frame: string; sx: number; sy: number } | { item: string; sx: number; sy: number };

export type ClientRect = { left: number; top: number; right: number; bottom: number };

export class PaneViewport {
  readonly camera = new Camera();
  readonly minimap: Minimap;
  /** the user moved the camera (or code centred something) since the view was last fitted: a resize keeps the
   * centre then, instead of fitting again */
  private moved = false;
  private settle = 0;

  constructor(private surface: PaneSurface, private view: () => ViewGraph | null, redraw: () => void) {
    this.minimap = new Minimap(surface.el, (x, y) => this.camera.centreOn(x, y, surface.width, surface.height, this.camera.s, "pan"));
    this.minimap.button.addEventListener("click", redraw);
    this.camera.on("change", (c) => {
      if (c.reason !== "fit" && c.reason !== "set") this.moved = true;
      redraw();
      // once the camera rests (after a selection centred a node, a zoom, a pan), the minimap moves out of the way
      // of what is now under it
      clearTimeout(this.settle);
      this.settle = window.setTimeout(() => this.placeOverlays(), 120);
    });
  }

  /** The whole view on screen (never magnified past 1.25): Fit always shows everything. */
  fit(): void {
    const { width: w, height: h } = this.surface;
    const v = this.view();
    const b = v && w ? viewBounds(v) : null;
    if (!b) return;
    const c = fitClear(v!, b, w, h, this.surface.titleBox());
    this.camera.set(c.s, c.tx, c.ty, "fit");
    this.moved = false;
  }

  /** The opening camera: the whole view, fitted (the layout chose what to open so that it is legible so). */
  initialView(): void {
    this.fit();
  }

  /**
   * After a group opened (its frame's corner where its box was): brings the frame's contents into view. A frame
   * that fits at this zoom is moved on screen as little as needed; a bigger one is fitted, down to a legible zoom;
   * one too big even for that is shown from its title down (centreFrame).
   */
  follow(f: number): void {
    const v = this.view();
    const { width: w, height: h } = this.surface;
    if (!v || f < 0 || f >= v.frames.length || !w) return;
    const b = frameBounds(v, f);
    const cam = this.camera;
    const [x0, y0] = cam.toScreen(b[0], b[1]), [x1, y1] = cam.toScreen(b[2], b[3]);
    const pad = 16;
    if (x0 >= 0 && y0 >= 0 && x1 <= w && y1 <= h) return;
    if (x1 - x0 <= w - 2 * pad && y1 - y0 <= h - 2 * pad) {
      const dx = x0 < pad ? pad - x0 : x1 > w - pad ? w - pad - x1 : 0;
      const dy = y0 < pad ? pad - y0 : y1 > h - pad ? h - pad - y1 : 0;
      cam.pan(dx, dy, "centre");
      return;
    }
    this.centreFrame(f);
  }

  /**
   * The pane got a new size (window resized, side panel moved, notebook column changed): a view the user has not
   * moved is fitted again, otherwise what was in the middle stays in the middle.
   */
  resized(oldW: number, oldH: number): void {
    if (!this.moved) this.initialView();
    else {
      const [cx, cy] = this.camera.toWorld(oldW / 2, oldH / 2);
      this.camera.centreOn(cx, cy, this.surface.width, this.surface.height, this.camera.s, "set");
    }
    this.placeOverlays();
  }

  /** Centres a drawn item, zooming in far enough to read its label (never out). */
  centreItem(i: number): void {
    const v = this.view();
    if (!v || i < 0) return;
    const it = v.items[i];
    this.camera.centreOn(it.x, it.y, this.surface.width, this.surface.height, Math.max(this.camera.s, 0.8), "centre");
  }

  /** Shows an open group's frame: whole if it is readable so, else readable from its title down. */
  centreFrame(f: number): void {
    const v = this.view();
    if (!v || f < 0 || f >= v.frames.length || !this.surface.width) return;
    const c = readableCamera(v, frameBounds(v, f), this.surface.width, this.surface.height, undefined,
      this.surface.titleBox());
    this.camera.set(c.s, c.tx, c.ty, "centre");
  }

  zoomBy(f: number, sx = this.surface.width / 2, sy = this.surface.height / 2): void {
    this.camera.zoomAt(f, sx, sy);
  }

  // ---- anchors: what stays in place across a relayout ---------------------------------------------------

  /** The anchor that keeps a closed group's top-left corner where it is (its frame will take its place). */
  anchorItem(id: string): Anchor | undefined {
    const v = this.view();
    const idx = v?.itemOfCluster.get(id);
    if (!v || idx === undefined) return undefined;
    const it = v.items[idx];
    const [sx, sy] = this.camera.toScreen(it.x - it.w / 2, it.y - it.h / 2);
    return { frame: id, sx, sy };
  }

  /** The anchor that keeps an open group's frame corner where it is (its box will take its place). */
  anchorFrame(id: string): Anchor | undefined {
    const v = this.view();
    const f = v?.frameOfCluster.get(id);
    if (!v || f === undefined) return undefined;
    const fr = v.frames[f];
    const [sx, sy] = this.camera.toScreen(fr.x - fr.w / 2, fr.y - fr.h / 2);
    return { item: id, sx, sy };
  }

  /** Puts the anchor's point of the new view back where it was on screen; false if it is not drawn there. */
  keep(view: ViewGraph, a: Anchor): boolean {
    const at = anchorPoint(view, a);
    if (!at) return false;
    this.camera.set(this.camera.s, a.sx - at[0] * this.camera.s, a.sy - at[1] * this.camera.s, "anchor");
    return true;
  }

  // ---- the minimap ------------------------------------------------------------------------------------------

  /** Redraws the minimap's specks (after a layout, a colour or a status change). */
  overview(p: Paint): void {
    this.minimap.update(p.view, p.t, p.hot, p.status);
  }

  /**
   * Keeps the minimap out of the drawing's way: hidden when the whole drawing is on screen (nothing to navigate),
   * folded to its button when it would cover a node; the user's own choice (its button) wins from then on.
   */
  placeOverlays(): void {
    const v = this.view();
    const { width: w, height: h } = this.surface;
    if (!v || !w) return;
    const b = viewBounds(v);
    const whole = !b || (this.camera.toScreen(b[0], b[1])[0] >= -1 && this.camera.toScreen(b[0], b[1])[1] >= -1 &&
      this.camera.toScreen(b[2], b[3])[0] <= w + 1 && this.camera.toScreen(b[2], b[3])[1] <= h + 1);
    if (whole) { this.minimap.auto(false); return; }
    const m = this.minimap.rectIn(this.surface.el);
    const covers = !!m && v.items.some((it) => {
      const [x0, y0] = this.camera.toScreen(it.x - it.w / 2, it.y - it.h / 2);
      const [x1, y1] = this.camera.toScreen(it.x + it.w / 2, it.y + it.h / 2);
      return x0 < m.right && m.left < x1 && y0 < m.bottom && m.top < y1;
    });
    this.minimap.auto(!covers);
  }

  // ---- client (viewport CSS pixel) coordinates --------------------------------------------------------

  /** A world point in client CSS pixels (`r`: the canvas's client rectangle, when the caller has it). */
  private client(wx: number, wy: number, r: DOMRect = this.surface.canvas.getBoundingClientRect()): { x: number; y: number } {
    const [x, y] = this.camera.toScreen(wx, wy);
    return { x: r.left + x, y: r.top + y };
  }

  /** Centre of an item in client CSS pixels, or null if it is not drawn. */
  itemClientPosition(i: number): { x: number; y: number } | null {
    const v = this.view();
    if (!v || i < 0 || i >= v.items.length) return null;
    return this.client(v.items[i].x, v.items[i].y);
  }

  /** Centre of an open group's frame in client CSS pixels, or null. */
  frameClientPosition(f: number): { x: number; y: number } | null {
    const v = this.view();
    if (!v || f < 0 || f >= v.frames.length) return null;
    return this.client(v.frames[f].x, v.frames[f].y);
  }

  /** A point on the drawn edge between two items, in client CSS pixels (for hovering it). */
  edgeClientPosition(a: number, b: number): { x: number; y: number } | null {
    const v = this.view();
    const m = v ? edgeMidpoint(v, a, b) : null;
    return m ? this.client(m[0], m[1]) : null;
  }

  /** A world rectangle in client CSS pixels. */
  clientRect(b: Bounds): ClientRect {
    const r = this.surface.canvas.getBoundingClientRect();
    const p0 = this.client(b[0], b[1], r), p1 = this.client(b[2], b[3], r);
    return { left: p0.x, top: p0.y, right: p1.x, bottom: p1.y };
  }
}

/** The world point an anchor refers to in a new view, or null if it is not drawn there. */
function anchorPoint(view: ViewGraph, a: Anchor): [number, number] | null {
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
