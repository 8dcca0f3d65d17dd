/**
 * Text on the canvas: node and group labels, frame titles and the ×N counts of aggregated edges. Every label is
 * drawn at a size that reads (LEGIBLE_PX or more on screen) or not at all, and never runs out of its box or its
 * frame: what does not fit is cut with an ellipsis.
 *
 * Zoomed in (TEXT_SCALE and more) labels are drawn in the world, two lines per box; between that and 12 px on
 * screen they keep LEGIBLE_PX and lose the second line. Zoomed further out, screenLabels names what still has
 * room, at a fixed screen size. A node whose op would be cut ("Rep…") gets it whole on a chip over its box where
 * that covers no other box or label (chips: the selected, searched, changed and hottest nodes claim room first).
 */
import { darkFill, fillAt } from "../model/colour";
import { cutText, FONT_FAMILY, LABEL_FONT, SUB_FONT } from "./measure";
import { CONTROLS_H, CONTROLS_W, FRAME_TITLE_H } from "../layout/types";
import type { CameraState } from "./camera";
import type { Theme } from "./theme";
import { KIND_GROUP } from "./shapes";
import type { Paint } from "./render";

/** The smallest label size on screen that reads comfortably. */
export const LEGIBLE_PX = 9;
const LABEL_PX = 12;
const TITLE_PX = 11;
/** zoomed out, group labels, frame titles and node labels that fit are drawn at this screen size */
const SCREEN_LABEL_PX = 10.5;

/** Labels drawn: in all, legible ones, and legible ones on items (node and group boxes, not frame titles); `beside`:
 * the group labels drawn beside their box, not in it ([x0, y0, x1, y1] in canvas CSS pixels). */
export interface LabelStats {
  labels: number; legible: number; items: number; beside: [number, number, number, number][];
  /** per node item labelled: the text drawn for it (whole, or cut with an ellipsis) */
  texts: Map<number, string>;
}

/** Draws every label of the visible items and frames; returns how many, and how many are legible. */
export function drawLabels(ctx: CanvasRenderingContext2D, cam: CameraState, dpr: number, cssW: number, cssH: number, p: Paint,
  vis: number[], visFrames: number[], edges: number[], th: Theme): LabelStats {
  if (cam.s < TEXT_SCALE_MIN) return screenLabels(ctx, cam, dpr, cssW, cssH, p, vis, visFrames, th);
  const s = cam.s;
  const items = p.view.items;
  // world font sizes that are at least LEGIBLE_PX on screen
  const k = Math.max(1, LEGIBLE_PX / (LABEL_PX * s));
  const one = k > 1; // enlarged: one line only, cut to the box
  const labelFont = one ? `600 ${LABEL_PX * k}px ${FONT_FAMILY}` : LABEL_FONT;
  ctx.textBaseline = "middle";
  ctx.textAlign = "left";
  let labels = 0;
  const texts = new Map<number, string>();
  // nodes whose op is cut: drawn whole on a chip where there is room (after the rest), else cut as here
  const cutNodes: number[] = [];
  const cutTexts = new Map<number, string>();
  for (const i of vis) {
    const it = items[i];
    const light = darkFill(p.t[i], th.dark);
    const group = p.kind[i] === KIND_GROUP;
    const left = it.x - it.w / 2 + 10;
    const sub = p.sub[i] ?? it.ds;
    ctx.font = labelFont;
    ctx.fillStyle = light ? "#ffffff" : th.text;
    const room = it.w - 20 - (group ? 18 : 0);
    const text = one ? fitted(ctx, p, `L${i}:${Math.round(k * 8)}`, it.dl, room, false) : it.dl;
    if (text !== it.dl) {
      cutNodes.push(i);
      cutTexts.set(i, text);
    } else if (text !== "…") {
      ctx.fillText(text, left, one || !sub ? it.y : it.y - 7);
      labels++;
      if (!group) texts.set(i, text);
    }
    if (!one && sub && s >= 0.6) {
      ctx.font = SUB_FONT;
      ctx.fillStyle = light ? "#f3f4f6" : p.t[i] > 0.3 ? th.text : th.textMuted;
      ctx.fillText(sub, left, it.y + 8);
    }
    if (group) {
      ctx.font = labelFont;
      ctx.fillStyle = light ? "#ffffff" : th.text;
      ctx.fillText("+", it.x + it.w / 2 - 16, it.y);
    }
  }
  const titles = frameTitles(ctx, p, visFrames, th, Math.max(1, LEGIBLE_PX / (TITLE_PX * s)));
  // how many tensors an aggregated edge stands for
  ctx.font = SUB_FONT;
  ctx.fillStyle = th.bgText;
  ctx.textAlign = "center";
  const es = p.view.edges;
  for (const e of edges) {
    if (es[e].count < 2) continue;
    const [x, y] = countSpot(es[e].points!, p.view.frames, visFrames);
    ctx.fillText(`×${es[e].count}`, x, y);
  }
  if (cutNodes.length) {
    ctx.save();
    const { rects, boxes } = screenBoxes(cam, p, vis, cssW, cssH);
    const taken = new Occupancy(cssW, cssH);
    for (const f of visFrames) taken.add(titleRect(cam, p, f));
    const whole = chips(ctx, dpr, cssW, cssH, p, cutNodes, rects, boxes, taken, th, texts);
    ctx.restore();
    // the rest keep their op cut to the box, in the world (as the loop above would have drawn them)
    ctx.font = labelFont;
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    for (const i of cutNodes) {
      if (whole.has(i)) { labels++; continue; }
      const text = cutTexts.get(i)!;
      if (text === "…") continue;
      const it = items[i];
      ctx.fillStyle = darkFill(p.t[i], th.dark) ? "#ffffff" : th.text;
      ctx.fillText(text, it.x - it.w / 2 + 10, it.y);
      if (p.kind[i] !== KIND_GROUP) texts.set(i, text);
      labels++;
    }
  }
  // every label drawn here is at least LEGIBLE_PX on screen
  return { labels: labels + titles, legible: labels + titles, items: labels, beside: [], texts };
}

/** Each visible item's box in canvas CSS pixels, by item, and the same boxes as an occupancy grid. */
function screenBoxes(cam: CameraState, p: Paint, vis: number[], cssW: number, cssH: number): { rects: Map<number, Rect>; boxes: Occupancy } {
  const items = p.view.items, s = cam.s;
  const rects = new Map<number, Rect>();
  const boxes = new Occupancy(cssW, cssH);
  for (const i of vis) {
    const it = items[i];
    const r: Rect = [(it.x - it.w / 2) * s + cam.tx, (it.y - it.h / 2) * s + cam.ty, (it.x + it.w / 2) * s + cam.tx, (it.y + it.h / 2) * s + cam.ty];
    rects.set(i, r);
    boxes.add(r);
  }
  return { rects, boxes };
}

/** A frame's title bar in canvas CSS pixels. */
function titleRect(cam: CameraState, p: Paint, f: number): Rect {
  const fr = p.view.frames[f], s = cam.s;
  const x0 = (fr.x - fr.w / 2) * s + cam.tx, y0 = (fr.y - fr.h / 2) * s + cam.ty;
  return [x0, y0, x0 + fr.w * s, y0 + FRAME_TITLE_H * s];
}

/** Chips tried per frame: enough for every node a pane can show legibly, bounded for a huge graph zoomed out. */
const MAX_CHIPS = 400;
/** A box shorter than this on screen is a speck among specks: no chip is tried for it (nor ranked, every frame). */
const CHIP_MIN_H = 5;
/** Past this many candidates only the marked ones (selected, matches, diff status, hot) are ranked for a chip. */
const MAX_RANKED = 4 * MAX_CHIPS;

/**
 * How much a node's label matters when room is short: the selected node, the current search match, matches, the
 * diff's removed and added nodes, changed ones, hot ones (findings), then by position on the colour scale.
 */
function chipRank(p: Paint, i: number): number {
  let r = Number.isFinite(p.t[i]) ? p.t[i] : 0;
  if (p.hot[i]) r += 10;
  // a closed group's name is the structure ("h.0–11 · GPT2Block ×12")
  if (p.kind[i] === KIND_GROUP) r += 50;
  const st = p.status ? p.status[i] : 0;
  if (st === 3 || st === 4) r += 1000; else if (st === 2) r += 100;
  if (p.matches && p.matches[i]) r += 1e4;
  if (i === p.currentMatch) r += 1e5;
  if (i === p.selected) r += 1e6;
  return r;
}

/**
 * Draws the whole label of each of `nodes` (most important first; a closed group's name with its "+") on a chip in
 * the item's colour, at a fixed screen size, over its box: centred, else flush with its left or right edge, wherever the chip covers no other box, no
 * label already drawn, and nothing under the pane's zoom buttons. Returns the nodes drawn so (their text in `texts`).
 */
function chips(ctx: CanvasRenderingContext2D, dpr: number, cssW: number, cssH: number, p: Paint, nodes: number[],
  rects: Map<number, Rect>, boxes: Occupancy, taken: Occupancy, th: Theme, texts: Map<number, string>): Set<number> {
  const done = new Set<number>();
  let ranked = nodes.map((i) => [chipRank(p, i), i]);
  if (ranked.length > MAX_RANKED) ranked = ranked.filter((x) => x[0] >= 10);
  const order = ranked.sort((a, b) => b[0] - a[0]).slice(0, MAX_CHIPS).map((x) => x[1]);
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.font = `600 ${SCREEN_LABEL_PX}px ${FONT_FAMILY}`;
  ctx.textBaseline = "middle";
  ctx.textAlign = "left";
  const items = p.view.items;
  for (const i of order) {
    const own = rects.get(i);
    if (!own) continue;
    const [x0, y0, x1, y1] = own;
    if (y1 - y0 < CHIP_MIN_H || x1 < 0 || y1 < 0 || x0 > cssW || y0 > cssH) continue;
    // a closed group keeps its "+" (a click opens it)
    const text = p.kind[i] === KIND_GROUP ? `${items[i].dl}  +` : items[i].dl;
    const tw = ctx.measureText(text).width;
    const w = tw + 8, hh = SCREEN_LABEL_PX + 4, cy = (y0 + y1) / 2;
    const spots = [(x0 + x1) / 2 - w / 2, x0, x1 - w];
    let placed: Rect | null = null;
    for (const left of spots) {
      const r: Rect = [left, cy - hh / 2, left + w, cy + hh / 2];
      if (r[0] < 0 || r[2] > cssW || r[1] < 0 || r[3] > cssH) continue;
      if (r[2] > cssW - CONTROLS_W && r[1] < CONTROLS_H) continue;
      if (!boxes.free(r, own) || !taken.free(r)) continue;
      placed = r;
      break;
    }
    if (!placed) continue;
    taken.add(placed);
    const [a, b, c, d] = placed;
    ctx.beginPath();
    ctx.roundRect(a, b, c - a, d - b, 4);
    // the box's own colour and no outline: it reads as the box, widened to its label
    ctx.fillStyle = fillAt(p.t[i], th.dark);
    ctx.fill();
    ctx.fillStyle = darkFill(p.t[i], th.dark) ? "#ffffff" : th.text;
    ctx.fillText(text, a + 4, cy + 0.5);
    texts.set(i, text);
    done.add(i);
  }
  return done;
}

/**
 * Where an edge's ×N goes: beside the middle of its route (not at its ends, where the arrowhead and the boxes are),
 * or beside the nearest other stretch when that is over a frame's title bar (an edge entering or leaving a frame
 * crosses it, and the count would run into the title).
 */
function countSpot(q: Float32Array, frames: { x: number; y: number; w: number; h: number }[], visFrames: number[]): [number, number] {
  const segs = q.length / 2 - 1;
  if (segs < 1) return [q[0] + 8, q[1]];
  const at = (k: number): [number, number] => [(q[2 * k] + q[2 * k + 2]) / 2 + 8, (q[2 * k + 1] + q[2 * k + 3]) / 2];
  const clear = ([x, y]: [number, number]) => visFrames.every((f) => {
    const fr = frames[f], x0 = fr.x - fr.w / 2, top = fr.y - fr.h / 2;
    return x + 12 < x0 || x - 12 > x0 + fr.w || y + 6 < top || y - 6 > top + FRAME_TITLE_H;
  });
  const m = Math.floor((segs - 1) / 2);
  for (let d = 0; d < segs; d++) {
    for (const k of d ? [m + d, m - d] : [m]) {
      if (k < 0 || k >= segs) continue;
      const c = at(k);
      if (clear(c)) return c;
    }
  }
  return at(m);
}

/** Below this zoom labels are drawn at a fixed screen size (screenLabels). */
const TEXT_SCALE_MIN = 0.5;

/** Frame titles in the title bar ("▾" says a click there collapses the frame), cut to the frame's width. */
function frameTitles(ctx: CanvasRenderingContext2D, p: Paint, vis: number[], th: Theme, k: number): number {
  const frames = p.view.frames;
  ctx.font = `600 ${TITLE_PX * k}px ${FONT_FAMILY}`;
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  ctx.fillStyle = th.frameText;
  let n = 0;
  for (const f of vis) {
    const fr = frames[f];
    const title = p.ftitle[f] ?? fr.title;
    const text = k > 1 ? fitted(ctx, p, `T${f}:${Math.round(k * 8)}`, title, fr.w - 16, false) : title;
    if (text === "…") continue;
    ctx.fillText(text, fr.x - fr.w / 2 + 8, fr.y - fr.h / 2 + FRAME_TITLE_H / 2 + 0.5);
    n++;
  }
  return n;
}

/** A label cut to a width (in the current font), cached per key until the next layout or recolouring. */
function fitted(ctx: CanvasRenderingContext2D, p: Paint, key: string, text: string, width: number, left: boolean): string {
  let out = p.fitted.get(key);
  if (out === undefined) {
    out = cut(ctx, text, width, left);
    p.fitted.set(key, out);
  }
  return out;
}

/**
 * Zoomed out (node text would be too small to read): the structure is still named. Group boxes and frame titles
 * get labels at a fixed screen size, and nodes whose boxes have room for one. A group's label goes inside its box
 * when it fits, else beside it (to the right) when nothing is drawn there, else inside cut to the box (from the
 * left for module paths without a class: their end tells siblings apart). A frame's title is a tab at its top-left
 * corner, cut to the frame's width. Labels never overlap one another (outer frames and bigger groups first).
 */
function screenLabels(ctx: CanvasRenderingContext2D, cam: CameraState, dpr: number, cssW: number, cssH: number, p: Paint,
  vis: number[], visFrames: number[], th: Theme): LabelStats {
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.textBaseline = "middle";
  ctx.textAlign = "left";
  const fontPx = SCREEN_LABEL_PX;
  ctx.font = `600 ${fontPx}px ${FONT_FAMILY}`;
  const taken = new Occupancy(cssW, cssH); // labels drawn
  // the drawn boxes: a label placed outside its own box must miss them
  const { rects, boxes } = screenBoxes(cam, p, vis, cssW, cssH);
  const s = cam.s;
  const items = p.view.items;
  let count = 0, titles = 0;
  const placedBeside: Rect[] = [];
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
    // a title never runs past its frame: cut to the part of the frame on screen
    const room = Math.min(sx + sw, cssW) - bx - 8;
    if (full > room) {
      txt = fitText(`f${f}`, title, Math.max(room, 0), false);
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
    titles++;
  }
  /** draws `txt` from `x` on the line `cy` inside item i's box, in the colour its fill needs, unless a label is
   * already there */
  const putInside = (txt: string, x: number, cy: number, i: number, width = ctx.measureText(txt).width): boolean => {
    const rect: Rect = [x, cy - fontPx / 2 - 1, x + width, cy + fontPx / 2 + 1];
    if (!taken.free(rect)) return false;
    taken.add(rect);
    ctx.fillStyle = darkFill(p.t[i], th.dark) ? "#ffffff" : th.text;
    ctx.fillText(txt, x, cy + 0.5);
    count++;
    return true;
  };
  // closed groups
  const groups = vis.filter((i) => p.kind[i] === KIND_GROUP).sort((a, b) => items[b].w * items[b].h - items[a].w * items[a].h);
  for (const i of groups) {
    const it = items[i];
    const [x0, y0, x1, y1] = rects.get(i)!;
    const sw = x1 - x0, sh = y1 - y0;
    if (sh < 0.5) continue;
    const cy = (y0 + y1) / 2;
    const full = widthOf(`g${i}`, it.label);
    if (sh >= fontPx && full <= sw - 6) {
      putInside(it.label, x0 + 3, cy, i, full);
      continue;
    }
    const beside: Rect = [x1 + 4, cy - fontPx / 2 - 1, x1 + 4 + Math.min(full, 220), cy + fontPx / 2 + 1];
    // beside, never under the pane's zoom buttons
    const underControls = beside[2] > cssW - CONTROLS_W && beside[1] < CONTROLS_H;
    if (beside[2] <= cssW && !underControls && boxes.free(beside) && taken.free(beside)) {
      const txt = full <= 220 ? it.label : fitText(`g${i}b`, it.label, 220, cutsLeft(it));
      taken.add(beside);
      placedBeside.push(beside);
      ctx.fillStyle = th.frameText;
      ctx.fillText(txt, x1 + 4, cy + 0.5);
      count++;
      continue;
    }
    if (sh < 7 || sw < 22) continue;
    const txt = fitText(`g${i}`, it.label, sw - 6, cutsLeft(it));
    if (txt !== "…") putInside(txt, x0 + 3, cy, i);
  }
  // nodes: their op, inside the box when it has room for all of it, else whole on a chip where that has room,
  // else cut inside the box when that still reads
  const texts = new Map<number, string>();
  const cutNodes: number[] = [];
  for (const i of vis) {
    if (p.kind[i] === KIND_GROUP) continue;
    const [x0, y0, x1, y1] = rects.get(i)!;
    if (x1 < 0 || y1 < 0 || x0 > cssW || y0 > cssH) continue;
    const fits = y1 - y0 >= fontPx + 2 && widthOf(`n${i}`, items[i].dl) <= x1 - x0 - 8;
    if (fits) { if (putInside(items[i].dl, x0 + 4, (y0 + y1) / 2, i)) texts.set(i, items[i].dl); } else if (y1 - y0 >= CHIP_MIN_H) cutNodes.push(i);
  }
  const whole = cutNodes.length ? chips(ctx, dpr, cssW, cssH, p, cutNodes, rects, boxes, taken, th, texts) : new Set<number>();
  count += whole.size;
  ctx.font = `600 ${fontPx}px ${FONT_FAMILY}`;
  for (const i of cutNodes) {
    if (whole.has(i)) continue;
    const [x0, y0, x1, y1] = rects.get(i)!;
    if (y1 - y0 < fontPx + 2 || x1 - x0 < 28) continue;
    const txt = fitText(`n${i}`, items[i].dl, x1 - x0 - 8, false);
    if (txt !== "…" && putInside(txt, x0 + 4, (y0 + y1) / 2, i)) texts.set(i, txt);
  }
  return { labels: count + titles, legible: count + titles, items: count, beside: placedBeside, texts };
}

/** Module paths without a class are cut from the left: their end tells siblings apart. */
function cutsLeft(it: { cluster: { kind: string; cls: string | null } | null }): boolean {
  return it.cluster?.kind === "module" && !it.cluster.cls;
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
  /** Whether r overlaps none of the rectangles added (`except`: one of them, by identity, that it may overlap). */
  free(r: Rect, except?: Rect): boolean {
    for (const k of this.keys(r)) for (const q of this.cells.get(k) ?? []) {
      if (q !== except && r[0] < q[2] && q[0] < r[2] && r[1] < q[3] && q[1] < r[3]) return false;
    }
    return true;
  }
  add(r: Rect): void {
    for (const k of this.keys(r)) { const l = this.cells.get(k); if (l) l.push(r); else this.cells.set(k, [r]); }
  }
}

/** Cuts text to a width in the current font (cutText: a trailing ×N stays). */
function cut(ctx: CanvasRenderingContext2D, text: string, width: number, left: boolean): string {
  return cutText((t) => ctx.measureText(t).width, text, width, left);
}
