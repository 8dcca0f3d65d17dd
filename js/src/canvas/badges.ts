/**
 * Finding badges on the canvas: a round mark just outside the top-left corner of every node the advisor names ("!" warning,
 * "i" info, "✓" a finding of A that B no longer has), and on every closed group holding such nodes ("!3": three
 * findings inside). Drawn in screen pixels after everything else, at a fixed size, so they stay visible however far
 * the view is zoomed out (the diff's status badges sit on the top-right corner, these on the top-left).
 */
import type { CameraState } from "./camera";
import type { Theme } from "./theme";
import type { ViewGraph } from "../model/view";
import { LEVEL_INFO, LEVEL_RESOLVED, LEVEL_WARNING, type FindingMarks } from "../model/findings";
import { FONT_FAMILY } from "./measure";

/** One badge as drawn, in canvas CSS pixels (for the automation API and tests). */
export interface DrawnBadge {
  item: number;
  x: number;
  y: number;
  r: number;
  /** its width (a pill when a count follows the symbol) */
  w: number;
  level: number;
  label: string;
}

const SYMBOL: Record<number, string> = { [LEVEL_WARNING]: "!", [LEVEL_INFO]: "i", [LEVEL_RESOLVED]: "✓" };

/** Badge fill and text per level, on light and dark backgrounds (contrast ≥ 4.5 for the symbol). */
export function badgeColours(level: number, dark: boolean): { fill: string; text: string } {
  if (level === LEVEL_WARNING) return dark ? { fill: "#fb923c", text: "#1c1917" } : { fill: "#c2410c", text: "#ffffff" };
  if (level === LEVEL_RESOLVED) return dark ? { fill: "#4ade80", text: "#052e16" } : { fill: "#15803d", text: "#ffffff" };
  return dark ? { fill: "#38bdf8", text: "#082f49" } : { fill: "#0369a1", text: "#ffffff" };
}

/** Per-item levels and counts, computed once per (view, marks) and reused by every frame. */
const cache = new WeakMap<ViewGraph, { marks: FindingMarks; level: Uint8Array; count: Uint16Array }>();

function perItem(view: ViewGraph, marks: FindingMarks): { level: Uint8Array; count: Uint16Array } {
  const c = cache.get(view);
  if (c && c.marks === marks) return c;
  const r = marks.perItem(view.rep, view.items.length);
  cache.set(view, { marks, ...r });
  return r;
}

/** Where the badges of the items on screen go (screen positions in CSS pixels of the canvas), without drawing them:
 * the diff's status badges are placed clear of them first (marks.ts). */
export function placeFindingBadges(cam: CameraState, cssW: number, cssH: number, view: ViewGraph, marks: FindingMarks): DrawnBadge[] {
  const { level, count } = perItem(view, marks);
  const legible = cam.s >= 0.45; // the zoom from which labels are drawn: full-size badges with them
  const r = legible ? 7.5 : 5.5;
  const out: DrawnBadge[] = [];
  for (let i = 0; i < view.items.length; i++) {
    if (!level[i]) continue;
    const it = view.items[i];
    const x0 = (it.x - it.w / 2) * cam.s + cam.tx, y0 = (it.y - it.h / 2) * cam.s + cam.ty;
    if (x0 < -2 * r || y0 < -2 * r || x0 > cssW + r || y0 > cssH + r) continue;
    const sym = SYMBOL[level[i]];
    const label = it.cluster && count[i] > 1 ? `${sym}${count[i]}` : sym;
    // just outside the corner (over the border and the gap): the label inside starts right of it, uncovered
    const w = Math.max(2 * r, label.length * 6 + 8);
    out.push({ item: i, x: x0 - w / 2 + 3, y: y0 - r + 3, r, w, level: level[i], label });
  }
  return out;
}

/** Draws placed badges (placeFindingBadges) on top of everything; returns them. */
export function drawFindingBadges(ctx: CanvasRenderingContext2D, dpr: number, out: DrawnBadge[], th: Theme): DrawnBadge[] {
  if (!out.length) return out;
  ctx.save();
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  ctx.font = `700 ${out[0].r > 6 ? 10 : 8}px ${FONT_FAMILY}`;
  // lowest level first, so a warning is on top where badges overlap
  out.sort((a, b) => a.level - b.level);
  for (const b of out) {
    const { fill, text } = badgeColours(b.level, th.dark);
    const w = Math.max(2 * b.r, ctx.measureText(b.label).width + 8);
    ctx.beginPath();
    if (w > 2 * b.r && ctx.roundRect) ctx.roundRect(b.x - w / 2, b.y - b.r, w, 2 * b.r, b.r);
    else ctx.arc(b.x, b.y, b.r, 0, 2 * Math.PI);
    ctx.fillStyle = fill;
    ctx.fill();
    ctx.lineWidth = 1.5; // a rim in the background colour keeps it apart from the node and edges under it
    ctx.strokeStyle = th.bg;
    ctx.stroke();
    ctx.fillStyle = text;
    ctx.fillText(b.label, b.x, b.y + 0.5);
  }
  ctx.restore();
  return out;
}
