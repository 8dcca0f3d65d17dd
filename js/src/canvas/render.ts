/**
 * Canvas 2D drawing of a laid-out view. Only what intersects the viewport is drawn; fills are batched by colour
 * bucket and strokes by style so 10k visible elements cost a few dozen canvas calls, not thousands.
 * Text is drawn with fillText: graph strings can never become markup.
 */
import { BUCKET_COLOURS, MISSING_COLOUR, bucketOf, darkFill } from "../model/colour";
import { FONT_FAMILY, LABEL_FONT, SUB_FONT, TITLE_FONT } from "./measure";
import type { ViewGraph } from "../model/view";
import { FRAME_TITLE_H } from "../layout/types";
import type { CameraState } from "./camera";
import type { Theme } from "./theme";
import { drawBadges, drawStatus } from "./marks";
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
  ms: number;
}

/** Node labels are drawn from this zoom on (12 px bold text is then 6 px: small, still legible). */
export const LEGIBLE_SCALE = 0.5;
/** Below it, group labels and frame titles are drawn at this fixed screen size instead (they name the structure). */
const SCREEN_LABEL_PX = 10.5;

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
export function traceEdge(ctx: CanvasRenderingContext2D, p: Float32Array): void {
  const n = p.length / 2;
  ctx.moveTo(p[0], p[1]);
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


export function draw(ctx: CanvasRenderingContext2D, cam: CameraState, cssW: number, cssH: number, dpr: number, p: Paint, th: Theme): DrawStats {
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
  const text = s >= LEGIBLE_SCALE;
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
      ctx.lineWidth = (width + c * 0.8) * px;
      ctx.beginPath();
      for (const k of ks) traceEdge(ctx, edges[k].points!);
      ctx.stroke();
    }
    if (detailed) {
      ctx.beginPath();
      for (const k of list) arrowHead(ctx, edges[k].points!, 7 * Math.min(px, 2));
      ctx.fill();
    }
  };
  strokeEdges(visibleEdges, 1.1);
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
  for (const [b, list] of byBucket) {
    ctx.beginPath();
    for (const i of list) { const it = items[i]; box(ctx, it.x - it.w / 2, it.y - it.h / 2, it.w, it.h, radius(i), detailed); }
    ctx.fillStyle = fillOf(p.t[list[0]]);
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
  let labels = 0;
  if (text) {
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    for (const i of vis) {
      const it = items[i];
      const light = darkFill(p.t[i]);
      const left = it.x - it.w / 2 + 10;
      const sub = p.sub[i] ?? it.ds;
      const lineY = sub ? it.y - 7 : it.y;
      ctx.font = LABEL_FONT;
      ctx.fillStyle = light ? "#ffffff" : th.text;
      ctx.fillText(it.dl, left, lineY);
      labels++;
      if (sub && s >= 0.6) {
        ctx.font = SUB_FONT;
        ctx.fillStyle = light ? "#f3f4f6" : p.t[i] > 0.3 ? th.text : th.textMuted;
        ctx.fillText(sub, left, it.y + 8);
      }
      if (p.kind[i] === KIND_GROUP) {
        ctx.font = LABEL_FONT;
        ctx.fillText("+", it.x + it.w / 2 - 16, it.y);
      }
    }
    labels += frameTitles(ctx, p, visFrames, th);
    // how many tensors an aggregated edge stands for
    ctx.font = SUB_FONT;
    ctx.fillStyle = th.bgText;
    ctx.textAlign = "center";
    for (const k of visibleEdges.concat(hiEdges)) {
      const e = edges[k];
      if (e.count < 2) continue;
      const q = e.points!;
      const mid = Math.floor(q.length / 4) * 2;
      ctx.fillText(`×${e.count}`, (q[mid] + q[q.length - 2]) / 2 + 8, (q[mid + 1] + q[q.length - 1]) / 2);
    }
    if (p.status) drawBadges(ctx, p, vis, th);
  } else {
    labels += screenLabels(ctx, cam, dpr, cssW, cssH, p, vis, visFrames, th);
  }
  return { nodes: vis.length, edges: visibleEdges.length + hiEdges.length, labels, ms: performance.now() - t0 };
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

/** Frame titles at world scale, in the title bar ("▾" says a click there collapses the frame). */
function frameTitles(ctx: CanvasRenderingContext2D, p: Paint, vis: number[], th: Theme): number {
  const frames = p.view.frames;
  ctx.font = TITLE_FONT;
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  ctx.fillStyle = th.frameText;
  for (const f of vis) {
    const fr = frames[f];
    ctx.fillText(p.ftitle[f] ?? fr.title, fr.x - fr.w / 2 + 8, fr.y - fr.h / 2 + FRAME_TITLE_H / 2 + 0.5);
  }
  return vis.length;
}

/**
 * Zoomed out (node text would be too small to read): the structure is still named. Group boxes and frame titles
 * get labels at a fixed screen size. A group's label goes inside its box when it fits, else beside it (to the
 * right) when nothing is drawn there, else inside cut to the box (from the left for module paths: their end tells
 * siblings apart). A frame's title is a tab at its top-left corner, as long as the frame is wide or longer where
 * the space beside is free. Labels never overlap one another (outer frames and bigger groups first).
 */
function screenLabels(ctx: CanvasRenderingContext2D, cam: CameraState, dpr: number, cssW: number, cssH: number, p: Paint,
  vis: number[], visFrames: number[], th: Theme): number {
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.textBaseline = "middle";
  ctx.textAlign = "left";
  const fontPx = SCREEN_LABEL_PX;
  ctx.font = `600 ${fontPx}px ${FONT_FAMILY}`;
  const taken = new Occupancy(cssW, cssH); // labels drawn
  const boxes = new Occupancy(cssW, cssH); // the drawn boxes: a label placed outside its own box must miss them
  const s = cam.s;
  const items = p.view.items;
  const screen = (i: number): Rect => {
    const it = items[i];
    return [(it.x - it.w / 2) * s + cam.tx, (it.y - it.h / 2) * s + cam.ty, (it.x + it.w / 2) * s + cam.tx, (it.y + it.h / 2) * s + cam.ty];
  };
  for (const i of vis) boxes.add(screen(i));
  let count = 0;
  const fitText = (key: string, text: string, width: number, left: boolean): string => {
    const k = `${key}:${Math.floor(width / 6)}`;
    let out = p.fitted.get(k);
    if (out === undefined) {
      out = cut(ctx, text, width, left);
      p.fitted.set(k, out);
    }
    return out;
  };
  const widthOf = (key: string, text: string): number => {
    const k = `w:${key}`;
    let w = p.fitted.get(k);
    if (w === undefined) { w = String(ctx.measureText(text).width); p.fitted.set(k, w); }
    return Number(w);
  };
  // frame titles: a tab at the frame's top-left corner
  const frames = p.view.frames;
  for (const f of visFrames) {
    const fr = frames[f];
    const sx = (fr.x - fr.w / 2) * s + cam.tx, sy = (fr.y - fr.h / 2) * s + cam.ty;
    const sw = fr.w * s;
    if (sw < 12) continue;
    const bx = Math.max(sx, 0), by = Math.max(sy, 0);
    if (by > cssH || bx > cssW) continue;
    const title = p.ftitle[f] ?? fr.title;
    const full = widthOf(`f${f}`, title);
    let txt = title, tw = full;
    // beyond the frame's own width the tab must not cover anything drawn (over its own contents it may: it is
    // where its title bar is)
    const outside: Rect = [sx + sw, by, bx + full + 8, by + fontPx + 5];
    if (full + 8 > sw && !(boxes.free(outside) && taken.free([bx, by, bx + full + 8, by + fontPx + 5]))) {
      txt = fitText(`f${f}`, title, Math.max(sw - 8, 0), false);
      if (txt === "…" || !txt) continue;
      tw = ctx.measureText(txt).width;
    }
    const rect: Rect = [bx, by, bx + tw + 8, by + fontPx + 5];
    if (!taken.free(rect)) continue;
    taken.add(rect);
    ctx.fillStyle = th.frameTab;
    ctx.fillRect(rect[0], rect[1], rect[2] - rect[0], rect[3] - rect[1]);
    ctx.fillStyle = th.frameText;
    ctx.fillText(txt, bx + 4, by + (fontPx + 5) / 2 + 0.5);
    count++;
  }
  // closed groups
  const groups = vis.filter((i) => p.kind[i] === KIND_GROUP).sort((a, b) => items[b].w * items[b].h - items[a].w * items[a].h);
  for (const i of groups) {
    const it = items[i];
    const [x0, y0, x1, y1] = screen(i);
    const sw = x1 - x0, sh = y1 - y0;
    if (sh < 0.5) continue;
    const cy = (y0 + y1) / 2;
    const full = widthOf(`g${i}`, it.label);
    if (sh >= fontPx && full <= sw - 6) {
      const rect: Rect = [x0 + 3, cy - fontPx / 2 - 1, x0 + 3 + full, cy + fontPx / 2 + 1];
      if (!taken.free(rect)) continue;
      taken.add(rect);
      ctx.fillStyle = darkFill(p.t[i]) ? "#ffffff" : th.text;
      ctx.fillText(it.label, x0 + 3, cy + 0.5);
      count++;
      continue;
    }
    const beside: Rect = [x1 + 4, cy - fontPx / 2 - 1, x1 + 4 + Math.min(full, 220), cy + fontPx / 2 + 1];
    if (beside[2] <= cssW && boxes.free(beside) && taken.free(beside)) {
      const txt = full <= 220 ? it.label : fitText(`g${i}b`, it.label, 220, it.cluster?.kind === "module");
      taken.add(beside);
      ctx.fillStyle = th.frameText;
      ctx.fillText(txt, x1 + 4, cy + 0.5);
      count++;
      continue;
    }
    if (sh < 7 || sw < 22) continue;
    const txt = fitText(`g${i}`, it.label, sw - 6, it.cluster?.kind === "module");
    if (txt === "…") continue;
    const rect: Rect = [x0 + 3, cy - fontPx / 2 - 1, x0 + 3 + ctx.measureText(txt).width, cy + fontPx / 2 + 1];
    if (!taken.free(rect)) continue;
    taken.add(rect);
    ctx.fillStyle = darkFill(p.t[i]) ? "#ffffff" : th.text;
    ctx.fillText(txt, x0 + 3, cy + 0.5);
    count++;
  }
  return count;
}

type Rect = [number, number, number, number];

/** Screen rectangles already covered by a label, bucketed in 64 px cells so a check costs a handful of tests. */
class Occupancy {
  private cells = new Map<number, Rect[]>();
  constructor(private w: number, private h: number) {}
  private keys(r: Rect): number[] {
    const out: number[] = [];
    const x0 = Math.max(0, Math.floor(r[0] / 64)), x1 = Math.min(Math.ceil(this.w / 64), Math.floor(r[2] / 64));
    const y0 = Math.max(0, Math.floor(r[1] / 64)), y1 = Math.min(Math.ceil(this.h / 64), Math.floor(r[3] / 64));
    for (let x = x0; x <= x1; x++) for (let y = y0; y <= y1; y++) out.push(y * 4096 + x);
    return out;
  }
  free(r: Rect): boolean {
    for (const k of this.keys(r)) for (const q of this.cells.get(k) ?? []) {
      if (r[0] < q[2] && q[0] < r[2] && r[1] < q[3] && q[1] < r[3]) return false;
    }
    return true;
  }
  add(r: Rect): void {
    for (const k of this.keys(r)) { const l = this.cells.get(k); if (l) l.push(r); else this.cells.set(k, [r]); }
  }
}

/** Cuts text to a width with an ellipsis, at the end or (left) at the start. */
function cut(ctx: CanvasRenderingContext2D, text: string, width: number, left: boolean): string {
  if (ctx.measureText(text).width <= width) return text;
  let lo = 0, hi = text.length;
  const piece = (k: number) => (left ? `…${text.slice(text.length - k)}` : `${text.slice(0, k)}…`);
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ctx.measureText(piece(mid)).width <= width) lo = mid; else hi = mid - 1;
  }
  return piece(lo);
}

/** The fill of an item at position t on the colour scale (its 32-step bucket), grey for no data. */
export function fillOf(t: number): string {
  const b = bucketOf(t);
  return b < 0 ? MISSING_COLOUR : BUCKET_COLOURS[b];
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
