/**
 * Canvas 2D drawing of a laid-out view. Only what intersects the viewport is drawn; fills are batched by colour
 * bucket and strokes by style so 10k visible elements cost a few dozen canvas calls, not thousands.
 * Text is drawn with fillText: graph strings can never become markup.
 */
import { bucketOf, fillAt } from "../model/colour";
import type { ViewGraph } from "../model/view";
import { FRAME_TITLE_H } from "../layout/types";
import type { CameraState } from "./camera";
import type { Theme } from "./theme";
import { drawStatus } from "./marks";
import { drawLabels } from "./labels";
import { KIND_BACKWARD, KIND_CUSTOM, KIND_GROUP, KIND_LEAF, box } from "./shapes";

export { KIND_BACKWARD, KIND_CUSTOM, KIND_GROUP, KIND_LEAF };


export interface Paint {
  view: ViewGraph;
  /** per edge: minX, minY, maxX, maxY */
  edgeBox: Float32Array;
  /** per item: position on the colour scale (NaN = no data) */
  t: Float64Array;
  hot: Uint8Array;
  kind: Uint8Array;
  selected: number;
  hoverItem: number;
  hoverEdge: number;
  /** per item: 1 when it is or contains a search match */
  matches: Uint8Array | null;
  currentMatch: number;
  /** per item: diff status code (diff/model.ts: 2 changed, 3 added, 4 removed; for a group, of its members), or null */
  status: Uint8Array | null;
  /** per item: how many members of a group are changed, added or removed */
  statusCount: Int32Array | null;
  /** per item: the second line as drawn (a group's: its size and its cost in the colour metric) */
  sub: string[];
  /** per frame: the title as drawn (with the frame's cost), and its position on the colour scale */
  ftitle: string[];
  ft: Float64Array;
  /** the frame whose title is hovered, or -1 */
  hoverFrame: number;
  /** labels fitted to a screen width, by item/frame and width (cleared with each layout) */
  fitted: Map<string, string>;
}

export interface DrawStats {
  nodes: number;
  edges: number;
  /** labels drawn: node and group labels, frame titles (not the ×N edge counts nor badges) */
  labels: number;
  /** of those, the ones drawn at a legible size on screen (LEGIBLE_PX or more) */
  legible: number;
  /** legible labels on drawn items (node and group boxes) */
  itemLabels: number;
  /** group labels drawn beside their box (labels.ts), [x0, y0, x1, y1] in canvas CSS pixels */
  beside: [number, number, number, number][];
  /** per node item labelled: the text drawn (labels.ts) */
  texts: Map<number, string>;
  ms: number;
}

/** Node labels are drawn in their boxes from this zoom on; below it, labels.ts names what still has room. */
export const TEXT_SCALE = 0.5;

export function edgeBoxes(view: ViewGraph): Float32Array {
  const box = new Float32Array(view.edges.length * 4);
  view.edges.forEach((e, k) => {
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    const p = e.points!;
    for (let i = 0; i < p.length; i += 2) {
      x0 = Math.min(x0, p[i]); x1 = Math.max(x1, p[i]); y0 = Math.min(y0, p[i + 1]); y1 = Math.max(y1, p[i + 1]);
    }
    box.set([x0, y0, x1, y1], k * 4);
  });
  return box;
}

/** Adds one edge to the current path: a vertical S-curve for two points, a smoothed polyline otherwise. */
export function traceEdge(ctx: CanvasRenderingContext2D, p: Float32Array, coarse = false): void {
  const n = p.length / 2;
  ctx.moveTo(p[0], p[1]);
  if (coarse) {
    // zoomed far out a curve is a few pixels long: its polyline looks the same and rasterises far faster
    for (let i = 1; i < n; i++) ctx.lineTo(p[2 * i], p[2 * i + 1]);
    return;
  }
  if (n === 2) {
    const my = (p[1] + p[3]) / 2;
    ctx.bezierCurveTo(p[0], my, p[2], my, p[2], p[3]);
    return;
  }
  for (let i = 1; i < n - 1; i++) {
    const mx = (p[2 * i] + p[2 * i + 2]) / 2, my = (p[2 * i + 1] + p[2 * i + 3]) / 2;
    ctx.quadraticCurveTo(p[2 * i], p[2 * i + 1], mx, my);
  }
  ctx.lineTo(p[2 * n - 2], p[2 * n - 1]);
}

function arrowHead(ctx: CanvasRenderingContext2D, p: Float32Array, size: number): void {
  const n = p.length / 2;
  const x = p[2 * n - 2], y = p[2 * n - 1];
  let dx: number, dy: number;
  if (n === 2) { dx = 0; dy = p[3] >= p[1] ? 1 : -1; } else { dx = x - p[2 * n - 4]; dy = y - p[2 * n - 3]; }
  const len = Math.hypot(dx, dy) || 1;
  dx /= len; dy /= len;
  ctx.moveTo(x, y);
  ctx.lineTo(x - dx * size - dy * size * 0.5, y - dy * size + dx * size * 0.5);
  ctx.lineTo(x - dx * size + dy * size * 0.5, y - dy * size - dx * size * 0.5);
  ctx.closePath();
}


/** Below this zoom edges are drawn as polylines through their route points, not curves. */
const COARSE_EDGES = 0.2;

/**
 * Draws the view. `tag`, when given, is called after each item's fill with the item's index: the fills are then one
 * path per item (a picture names each shape by its node), instead of one path per colour bucket.
 */
export function draw(ctx: CanvasRenderingContext2D, cam: CameraState, cssW: number, cssH: number, dpr: number, p: Paint, th: Theme,
  tag?: (item: number) => void): DrawStats {
  const t0 = performance.now();
  const { items, edges } = p.view;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = th.bg;
  ctx.fillRect(0, 0, cssW, cssH);
  ctx.setTransform(dpr * cam.s, 0, 0, dpr * cam.s, dpr * cam.tx, dpr * cam.ty);
  const s = cam.s;
  const px = 1 / s; // one screen pixel in world units
  const vx0 = -cam.tx / s, vy0 = -cam.ty / s, vx1 = (cssW - cam.tx) / s, vy1 = (cssH - cam.ty) / s;
  const detailed = s > 0.35;
  const coarse = s < COARSE_EDGES;
  const text = s >= TEXT_SCALE;
  const visFrames = drawFrames(ctx, p, th, px, vx0, vy0, vx1, vy1, text);

  // ---- edges ----
  const visibleEdges: number[] = [];
  const hiEdges: number[] = [];
  const eb = p.edgeBox;
  for (let k = 0; k < edges.length; k++) {
    if (eb[4 * k + 2] < vx0 || eb[4 * k] > vx1 || eb[4 * k + 3] < vy0 || eb[4 * k + 1] > vy1) continue;
    const e = edges[k];
    if (k === p.hoverEdge || e.s === p.selected || e.t === p.selected) hiEdges.push(k);
    else visibleEdges.push(k);
  }
  ctx.lineCap = "round";
  ctx.strokeStyle = th.edge;
  ctx.fillStyle = th.edge;
  const strokeEdges = (list: number[], width: number) => {
    // aggregated edges (many tensors between two groups) are drawn thicker, by count class
    const classes = new Map<number, number[]>();
    for (const k of list) {
      const c = Math.min(4, Math.floor(Math.log2(edges[k].count)));
      const arr = classes.get(c);
      if (arr) arr.push(k); else classes.set(c, [k]);
    }
    for (const [c, ks] of classes) {
      // a plain edge is a one-pixel line (the rasteriser's fast path; a wider stroke of tens of thousands of
      // edges costs a big drawing its frame rate), as is every edge zoomed far out
      ctx.lineWidth = (coarse || (c === 0 && width < 2) ? 1 : width + c * 0.8) * px;
      ctx.beginPath();
      for (const k of ks) traceEdge(ctx, edges[k].points!, coarse);
      ctx.stroke();
    }
    if (detailed) {
      ctx.beginPath();
      for (const k of list) arrowHead(ctx, edges[k].points!, 7 * Math.min(px, 2));
      ctx.fill();
    }
  };
  strokeEdges(visibleEdges, 1);
  if (hiEdges.length) {
    ctx.strokeStyle = th.edgeHi;
    ctx.fillStyle = th.edgeHi;
    strokeEdges(hiEdges, 2.2);
  }

  // ---- nodes ----
  const vis: number[] = [];
  for (let i = 0; i < items.length; i++) {
    const it = items[i];
    if (it.x + it.w / 2 < vx0 || it.x - it.w / 2 > vx1 || it.y + it.h / 2 < vy0 || it.y - it.h / 2 > vy1) continue;
    vis.push(i);
  }
  const radius = (i: number) => (p.kind[i] === KIND_LEAF ? items[i].h / 2 : 5);
  // groups: a second box peeking out behind reads as "a stack of nodes"
  if (detailed) {
    ctx.beginPath();
    for (const i of vis) if (p.kind[i] === KIND_GROUP) { const it = items[i]; box(ctx, it.x - it.w / 2 + 4, it.y - it.h / 2 + 4, it.w, it.h, 5, true); }
    ctx.fillStyle = th.groupShadow;
    ctx.fill();
  }
  const byBucket = new Map<number, number[]>();
  for (const i of vis) {
    const b = bucketOf(p.t[i]);
    const arr = byBucket.get(b);
    if (arr) arr.push(i); else byBucket.set(b, [i]);
  }
  for (const [, list] of byBucket) {
    ctx.fillStyle = fillOf(p.t[list[0]], th.dark);
    if (tag) {
      for (const i of list) { const it = items[i]; ctx.beginPath(); box(ctx, it.x - it.w / 2, it.y - it.h / 2, it.w, it.h, radius(i), detailed); ctx.fill(); tag(i); }
      continue;
    }
    ctx.beginPath();
    for (const i of list) { const it = items[i]; box(ctx, it.x - it.w / 2, it.y - it.h / 2, it.w, it.h, radius(i), detailed); }
    ctx.fill();
  }
  if (detailed || vis.length < 3000) {
    const strokeSet = (pred: (i: number) => boolean, colour: string, width: number, dash: number[] = []) => {
      ctx.beginPath();
      let any = false;
      for (const i of vis) if (pred(i)) { any = true; const it = items[i]; box(ctx, it.x - it.w / 2, it.y - it.h / 2, it.w, it.h, radius(i), detailed); }
      if (!any) return;
      ctx.setLineDash(dash.map((d) => d * px));
      ctx.strokeStyle = colour;
      ctx.lineWidth = width * px;
      ctx.stroke();
      ctx.setLineDash([]);
    };
    strokeSet((i) => p.kind[i] === KIND_BACKWARD || p.kind[i] === KIND_LEAF, th.stroke, 1);
    strokeSet((i) => p.kind[i] === KIND_CUSTOM, th.stroke, 1.5, [4, 3]);
    strokeSet((i) => p.kind[i] === KIND_GROUP, th.group, 2);
  }
  // hot nodes: thick dark outline, drawn at any zoom so they stay visible as specks when zoomed out
  const ring = (list: number[], colour: string, width: number, gap: number) => {
    if (!list.length) return;
    ctx.beginPath();
    for (const i of list) {
      const it = items[i];
      const g = gap * px + (width * px) / 2;
      box(ctx, it.x - it.w / 2 - g, it.y - it.h / 2 - g, it.w + 2 * g, it.h + 2 * g, radius(i) + g, detailed);
    }
    ctx.strokeStyle = colour;
    ctx.lineWidth = width * px;
    ctx.stroke();
  };
  if (p.status) drawStatus(ctx, p, vis, px, detailed, th);
  ring(vis.filter((i) => p.hot[i]), th.hot, 3.5, 0);
  if (p.matches) ring(vis.filter((i) => p.matches![i] && i !== p.currentMatch), th.match, 2.5, 3);
  if (p.currentMatch >= 0) ring([p.currentMatch], th.match, 4.5, 3);
  if (p.hoverItem >= 0) ring([p.hoverItem], th.edgeHi, 1.5, 1);
  if (p.selected >= 0) ring([p.selected], th.select, 3.5, 5);

  // ---- text ----
  const st = drawLabels(ctx, cam, dpr, cssW, cssH, p, vis, visFrames, visibleEdges.concat(hiEdges), th);
  return { nodes: vis.length, edges: visibleEdges.length + hiEdges.length, labels: st.labels, legible: st.legible, itemLabels: st.items, beside: st.beside, texts: st.texts, ms: performance.now() - t0 };
}

/** Frames (expanded groups) under everything else: a tinted body, a border and a title bar. Returns the visible ones. */
function drawFrames(ctx: CanvasRenderingContext2D, p: Paint, th: Theme, px: number, vx0: number, vy0: number, vx1: number, vy1: number, detailed: boolean): number[] {
  const frames = p.view.frames;
  const vis: number[] = [];
  for (let f = 0; f < frames.length; f++) {
    const fr = frames[f];
    if (fr.x + fr.w / 2 < vx0 || fr.x - fr.w / 2 > vx1 || fr.y + fr.h / 2 < vy0 || fr.y - fr.h / 2 > vy1) continue;
    vis.push(f);
  }
  if (!vis.length) return vis;
  // parents come first, so nested frames paint over their parents and their tints add up with depth
  ctx.beginPath();
  for (const f of vis) { const fr = frames[f]; box(ctx, fr.x - fr.w / 2, fr.y - fr.h / 2, fr.w, fr.h, 6, detailed); }
  ctx.fillStyle = th.frameFill;
  ctx.fill();
  ctx.beginPath();
  for (const f of vis) { const fr = frames[f]; box(ctx, fr.x - fr.w / 2, fr.y - fr.h / 2, fr.w, FRAME_TITLE_H, 6, detailed); }
  ctx.fillStyle = th.frameTitle;
  ctx.fill();
  ctx.beginPath();
  for (const f of vis) { const fr = frames[f]; box(ctx, fr.x - fr.w / 2, fr.y - fr.h / 2, fr.w, fr.h, 6, detailed); }
  ctx.strokeStyle = th.frameStroke;
  ctx.lineWidth = px;
  ctx.stroke();
  if (p.hoverFrame >= 0 && vis.includes(p.hoverFrame)) {
    const fr = frames[p.hoverFrame];
    ctx.beginPath();
    box(ctx, fr.x - fr.w / 2, fr.y - fr.h / 2, fr.w, fr.h, 6, detailed);
    ctx.strokeStyle = th.edgeHi;
    ctx.lineWidth = 2 * px;
    ctx.stroke();
  }
  return vis;
}

/** The fill of an item at position t on the colour scale (its 32-step bucket), grey for no data. */
export function fillOf(t: number, dark = false): string {
  return fillAt(t, dark);
}

/** Squared distance from (x, y) to the edge's drawn shape (curve sampled into a polyline). */
export function edgeDistance2(p: Float32Array, x: number, y: number): number {
  const pts: number[] = [];
  if (p.length === 4) {
    const my = (p[1] + p[3]) / 2;
    for (let i = 0; i <= 12; i++) {
      const t = i / 12, u = 1 - t;
      pts.push(u * u * u * p[0] + 3 * u * u * t * p[0] + 3 * u * t * t * p[2] + t * t * t * p[2],
        u * u * u * p[1] + 3 * u * u * t * my + 3 * u * t * t * my + t * t * t * p[3]);
    }
  } else pts.push(...p);
  let best = Infinity;
  for (let i = 0; i + 3 < pts.length; i += 2) best = Math.min(best, segDist2(x, y, pts[i], pts[i + 1], pts[i + 2], pts[i + 3]));
  return best;
}

function segDist2(px: number, py: number, ax: number, ay: number, bx: number, by: number): number {
  const dx = bx - ax, dy = by - ay;
  const l2 = dx * dx + dy * dy;
  let t = l2 ? ((px - ax) * dx + (py - ay) * dy) / l2 : 0;
  t = Math.max(0, Math.min(1, t));
  const qx = ax + t * dx - px, qy = ay + t * dy - py;
  return qx * qx + qy * qy;
}
