/** Geometry of a laid-out view: bounds, the opening camera, hit testing of items and edges. */
import type { ViewGraph } from "../model/view";
import { Camera, clamp, type CameraState } from "./camera";
import { edgeDistance2, TEXT_SCALE } from "./render";
import { CONTROLS_H, CONTROLS_W, FIT_PAD, FRAME_TITLE_H } from "../layout/types";

export type Bounds = [number, number, number, number];

/** [x0, y0, x1, y1] around every drawn item, frame and edge, or null for an empty view. */
export function viewBounds(v: ViewGraph): Bounds | null {
  if (!v.items.length) return null;
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  for (const it of v.items) {
    x0 = Math.min(x0, it.x - it.w / 2); x1 = Math.max(x1, it.x + it.w / 2);
    y0 = Math.min(y0, it.y - it.h / 2); y1 = Math.max(y1, it.y + it.h / 2);
  }
  for (const f of v.frames) {
    x0 = Math.min(x0, f.x - f.w / 2); x1 = Math.max(x1, f.x + f.w / 2);
    y0 = Math.min(y0, f.y - f.h / 2); y1 = Math.max(y1, f.y + f.h / 2);
  }
  // routes can leave the boxes' area (a drawing wrapped into columns runs its column-to-column edges above and
  // below them): what is drawn is fitted, so they count. Edges are curves inside their points' hull.
  for (const e of v.edges) {
    const p = e.points;
    if (!p) continue;
    for (let k = 0; k < p.length; k += 2) {
      x0 = Math.min(x0, p[k]); x1 = Math.max(x1, p[k]);
      y0 = Math.min(y0, p[k + 1]); y1 = Math.max(y1, p[k + 1]);
    }
  }
  return [x0, y0, x1, y1];
}

/** Bounds of one frame. */
export function frameBounds(v: ViewGraph, f: number): Bounds {
  const fr = v.frames[f];
  return [fr.x - fr.w / 2, fr.y - fr.h / 2, fr.x + fr.w / 2, fr.y + fr.h / 2];
}

/**
 * The camera that shows `b` whole if that is readable, else readable at its top, where the flow begins: a view
 * whose fitted scale is under `legible` starts at that scale (at most 0.8), centred on what is drawn in the first
 * screenful, and the minimap shows the rest. Views of mostly groups stay fitted down to half that scale: group
 * labels are drawn at every zoom, so the whole structure can be read. `title`: the pane's title box (one line or
 * two), which the drawing starts below when its left edge would reach under it.
 */
export function readableCamera(v: ViewGraph, b: Bounds, w: number, h: number, legible = TEXT_SCALE,
  title: Corner | null = null): CameraState {
  const fitted = fitClear(v, b, w, h, title);
  const groups = v.items.reduce((a, it) => a + (it.cluster ? 1 : 0), 0);
  const floor = groups * 2 >= v.items.length ? legible / 2 : legible;
  if (fitted.s >= floor) return fitted;
  const [x0, y0, x1, y1] = b;
  // Centre on what is drawn in the first screenful, not on the whole drawing (layered layouts of deep graphs
  // drift sideways, so the middle of the overall bounds can be empty at the top), and zoom out, down to the
  // legible scale, until those top items fit side by side.
  const yTop = y0 + h / 0.8;
  let lo = Infinity;
  let hi = -Infinity;
  for (const it of v.items) {
    if (it.y > yTop || it.y < y0 || it.x < x0 || it.x > x1) continue;
    lo = Math.min(lo, it.x - it.w / 2);
    hi = Math.max(hi, it.x + it.w / 2);
  }
  if (!Number.isFinite(lo)) { lo = x0; hi = x1; }
  // frames around the top items are part of what is read there: keep their left and right edges on screen if
  // they fit at the chosen scale
  // views of mostly nodes start at a comfortable 0.8; views of groups a little smaller, to show more of the tree
  const s = clamp((w - 48) / Math.max(hi - lo, 1), legible, floor < legible ? 0.65 : 0.8);
  if ((x1 - x0) * s <= w - 48) { lo = x0; hi = x1; }
  const tx = w / 2 - ((lo + hi) / 2) * s;
  const top = title && lo * s + tx < title.w ? Math.max(24, title.h + 8) : 24;
  return { s, tx, ty: top - y0 * s };
}

/** A box in a pane's top-left corner that covers the drawing (a pane's title), in CSS pixels from that corner. */
export type Corner = { w: number; h: number };

/**
 * The fitted camera (Camera.fitBounds), kept clear of the pane's zoom buttons in its top-right corner and of its
 * title (`title`, when the pane has one) in its top-left: when an item would sit under either, the drawing moves
 * down (below both) or, for the buttons alone, left, where the pane has room for that; else it is fitted again
 * below the title with a right border as wide as the buttons. A drawing that misses both corners keeps the whole
 * pane.
 */
export function fitClear(v: ViewGraph, b: Bounds, w: number, h: number, title: Corner | null = null): CameraState {
  const c = Camera.fitBounds(b, w, h);
  const [x0, y0, x1, y1] = b;
  const x1Limit = w - CONTROLS_W;
  const tw = title ? title.w : 0;
  const th = title ? title.h : 0;
  // what is fitted: the items inside the bounds (a frame's, when one is shown)
  const inside = v.items.filter((it) => it.x >= x0 && it.x <= x1 && it.y >= y0 && it.y <= y1);
  const top = (it: ViewGraph["items"][number], cam: CameraState) => (it.y - it.h / 2) * cam.s + cam.ty;
  const underButtons = (cam: CameraState) => inside.filter((it) =>
    (it.x + it.w / 2) * cam.s + cam.tx > x1Limit && top(it, cam) < CONTROLS_H);
  const underTitle = (cam: CameraState) => inside.filter((it) =>
    (it.x - it.w / 2) * cam.s + cam.tx < tw && top(it, cam) < th);
  const hitB = underButtons(c);
  const hitT = underTitle(c);
  if (!hitB.length && !hitT.length) return c;
  // down: below the buttons and the title, if the drawing's bottom stays inside the border
  const dy = Math.max(...hitB.map((it) => CONTROLS_H - top(it, c)), ...hitT.map((it) => th - top(it, c)));
  if (y1 * c.s + c.ty + dy <= h - FIT_PAD) {
    const down = { ...c, ty: c.ty + dy };
    if (!underButtons(down).length && !underTitle(down).length) return down;
  }
  // left: beside the buttons, if nothing is under the title and the drawing's left edge stays inside the border
  if (!hitT.length) {
    const dx = Math.max(...hitB.map((it) => (it.x + it.w / 2) * c.s + c.tx)) - x1Limit;
    if (x0 * c.s + c.tx - dx >= FIT_PAD) {
      const left = { ...c, tx: c.tx - dx };
      if (!underButtons(left).length && !underTitle(left).length) return left;
    }
  }
  const fitted = Camera.fitBounds(b, w, h - th, FIT_PAD, 1.25, CONTROLS_W);
  return { ...fitted, ty: fitted.ty + th };
}

/** The frame whose title bar is under world point (wx, wy), or -1; the bar stays ≥ 14 screen pixels tall to hit. */
export function hitFrameTitle(v: ViewGraph, scale: number, wx: number, wy: number): number {
  const bar = Math.max(FRAME_TITLE_H, 14 / scale);
  for (let f = v.frames.length - 1; f >= 0; f--) {
    const fr = v.frames[f];
    const top = fr.y - fr.h / 2;
    if (wy >= top && wy <= top + bar && Math.abs(wx - fr.x) <= fr.w / 2) return f;
  }
  return -1;
}

/** The topmost item under world point (wx, wy), or -1; tiny boxes when zoomed out stay clickable. */
export function hitItem(v: ViewGraph, scale: number, wx: number, wy: number): number {
  const slack = 2 / scale;
  for (let i = v.items.length - 1; i >= 0; i--) {
    const it = v.items[i];
    if (Math.abs(wx - it.x) <= it.w / 2 + slack && Math.abs(wy - it.y) <= it.h / 2 + slack) return i;
  }
  return -1;
}

/** The drawn edge nearest (wx, wy) within 5 screen pixels, or -1 (none when zoomed far out). */
export function hitEdge(v: ViewGraph, edgeBox: Float32Array, scale: number, wx: number, wy: number): number {
  if (scale < 0.2) return -1;
  const tol = 5 / scale;
  let best = -1, bd = tol * tol;
  const b = edgeBox;
  for (let k = 0; k < v.edges.length; k++) {
    if (wx < b[4 * k] - tol || wx > b[4 * k + 2] + tol || wy < b[4 * k + 1] - tol || wy > b[4 * k + 3] + tol) continue;
    const d = edgeDistance2(v.edges[k].points!, wx, wy);
    if (d < bd) { bd = d; best = k; }
  }
  return best;
}

/** A point on the drawn edge between items a and b (world units), or null. */
export function edgeMidpoint(v: ViewGraph, a: number, b: number): [number, number] | null {
  const e = v.edges.find((x) => x.s === a && x.t === b);
  if (!e || !e.points) return null;
  const p = e.points;
  if (p.length === 4) return [(p[0] + p[2]) / 2, (p[1] + p[3]) / 2]; // the S-curve is symmetric about its middle
  const k = Math.floor(p.length / 4) * 2;
  return [p[k], p[k + 1]];
}
