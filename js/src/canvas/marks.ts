/**
 * Diff status on the canvas, in a channel of its own that never collides with the colour scale (which carries the
 * cost): hues the heat palette never uses (violet changed, teal added, slate removed), a shape for each (changed:
 * a solid outline; added: a double outline; removed: a dashed outline over a hatched fill, "gone"), and a badge
 * that says it in a symbol: Δ changed, + added, − removed, or the number of such members on a closed group. The
 * badges are drawn at a fixed screen size outside the box's top-right corner, so they are readable at any zoom and
 * never cover a label.
 */
import type { Paint } from "./render";
import type { CameraState } from "./camera";
import { KIND_GROUP, box } from "./shapes";
import { FONT_FAMILY } from "./measure";
import type { Theme } from "./theme";

const CODES = [2, 3, 4] as const;
const SYMBOL: Record<number, string> = { 2: "Δ", 3: "+", 4: "−" };
const BADGE_FONT = `700 10px ${FONT_FAMILY}`;
const BADGE_FONT_SMALL = `700 8px ${FONT_FAMILY}`;

export function statusColour(th: Theme, code: number): string {
  return code === 3 ? th.added : code === 4 ? th.removed : th.changed;
}

/** Outlines (and the removed hatch), drawn over the fills and under the selection/search rings. */
export function drawStatus(ctx: CanvasRenderingContext2D, p: Paint, vis: number[], px: number, detailed: boolean, th: Theme): void {
  const st = p.status!;
  const items = p.view.items;
  const radius = (i: number) => (p.kind[i] === KIND_GROUP ? 5 : Math.min(5, items[i].h / 2));
  const outline = (list: number[], gap: number) => {
    ctx.beginPath();
    for (const i of list) {
      const it = items[i], g = gap * px;
      box(ctx, it.x - it.w / 2 - g, it.y - it.h / 2 - g, it.w + 2 * g, it.h + 2 * g, radius(i) + g, detailed);
    }
    ctx.stroke();
  };
  for (const code of CODES) {
    const list = vis.filter((i) => st[i] === code);
    if (!list.length) continue;
    const colour = statusColour(th, code);
    if (code === 4) hatch(ctx, p, list, px, colour);
    ctx.strokeStyle = colour;
    ctx.lineWidth = Math.max(2.5 * px, 1.5);
    const groups = list.filter((i) => p.kind[i] === KIND_GROUP), nodes = list.filter((i) => p.kind[i] !== KIND_GROUP);
    // removed: dashed ("not there any more"); a closed group holding such nodes: dashed too, its badge says how many
    ctx.setLineDash(code === 4 ? [5 * px, 3 * px] : []);
    outline(nodes, 0);
    ctx.setLineDash([6 * px, 3 * px]);
    outline(groups, 0);
    ctx.setLineDash([]);
    // added: a second, outer outline
    if (code === 3) { ctx.lineWidth = Math.max(1.5 * px, 1); outline(nodes, 4.5); }
  }
}

/** Diagonal stripes over removed items (clipped to their boxes). */
function hatch(ctx: CanvasRenderingContext2D, p: Paint, list: number[], px: number, colour: string): void {
  const items = p.view.items;
  ctx.save();
  ctx.beginPath();
  for (const i of list) { const it = items[i]; ctx.rect(it.x - it.w / 2, it.y - it.h / 2, it.w, it.h); }
  ctx.clip();
  ctx.beginPath();
  const step = Math.max(8, 9 * px);
  for (const i of list) {
    const it = items[i];
    const x0 = it.x - it.w / 2, y0 = it.y - it.h / 2;
    for (let d = -it.h; d < it.w; d += step) { ctx.moveTo(x0 + d, y0 + it.h); ctx.lineTo(x0 + d + it.h, y0); }
  }
  ctx.globalAlpha = 0.35;
  ctx.strokeStyle = colour;
  ctx.lineWidth = Math.max(1.5 * px, 1);
  ctx.stroke();
  ctx.restore();
}

/** One status badge as drawn, in canvas CSS pixels (for the automation API and tests). */
export interface DrawnStatusBadge { item: number; code: number; label: string; x: number; y: number; w: number; h: number; }

/**
 * The status badges, in screen pixels at a fixed size, just outside each item's top-right corner; returns them.
 * Zoomed far out they are smaller, but always say what they mark: a badge without its symbol or count says
 * nothing its outline does not. Where boxes stand close, a neighbour's finding badge (top-left corner, `avoid`)
 * would cover this one: then it slides left along the top edge of its own box (above its label, never over it), or
 * failing that rises above it.
 */
export function drawStatusBadges(ctx: CanvasRenderingContext2D, cam: CameraState, dpr: number, cssW: number, cssH: number, p: Paint,
  th: Theme, avoid: readonly { x: number; y: number; r: number; w: number }[] = []): DrawnStatusBadge[] {
  const st = p.status!;
  const items = p.view.items;
  const out: DrawnStatusBadge[] = [];
  ctx.save();
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  const small = cam.s < 0.45;
  const r = small ? 5.5 : 7;
  ctx.font = small ? BADGE_FONT_SMALL : BADGE_FONT;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  const hits = (cx: number, cy: number, w: number) => avoid.filter((b) =>
    Math.abs(b.y - cy) < b.r + r && cx - w / 2 < b.x + b.w / 2 + 1 && b.x - b.w / 2 - 1 < cx + w / 2);
  for (const code of CODES) {
    for (let i = 0; i < items.length; i++) {
      if (st[i] !== code) continue;
      const it = items[i];
      const x0 = (it.x - it.w / 2) * cam.s + cam.tx, x1 = (it.x + it.w / 2) * cam.s + cam.tx, y0 = (it.y - it.h / 2) * cam.s + cam.ty;
      if (x1 < -r || y0 < -r || x1 > cssW + r + 4 || y0 > cssH + r) continue;
      const label = p.kind[i] === KIND_GROUP ? String(p.statusCount?.[i] ?? "") : SYMBOL[code];
      const w = Math.max(2 * r, ctx.measureText(label).width + (small ? 5 : 8));
      // centred just outside the corner: over the border and the gap, not over the label inside
      let cx = x1 + w / 2 - 3, cy = y0 - r + 3;
      const blocking = hits(cx, cy, w);
      if (blocking.length) {
        const left = Math.min(...blocking.map((b) => b.x - b.w / 2 - 1)) - w / 2;
        if (left - w / 2 >= x0 + (x1 - x0) / 3 && !hits(left, cy, w).length) cx = left;
        else cy = y0 - 2 * r - 1;
      }
      ctx.beginPath();
      if (ctx.roundRect) ctx.roundRect(cx - w / 2, cy - r, w, 2 * r, r); else ctx.rect(cx - w / 2, cy - r, w, 2 * r);
      ctx.fillStyle = statusColour(th, code);
      ctx.fill();
      ctx.lineWidth = 1.5;
      ctx.strokeStyle = th.bg;
      ctx.stroke();
      ctx.fillStyle = th.dark ? "#0b1220" : "#ffffff";
      ctx.fillText(label, cx, cy + 0.5);
      out.push({ item: i, code, label, x: cx, y: cy, w, h: 2 * r });
    }
  }
  ctx.restore();
  return out;
}

/**
 * Per drawn item: a node's own status code; for a closed group, the code its changed/added/removed members share
 * (2 "changed" when they differ), and how many they are.
 */
export function itemStatus(view: { items: { cluster: unknown }[]; rep: Int32Array }, codes: Uint8Array): { status: Uint8Array; count: Int32Array } {
  const m = view.items.length;
  const status = new Uint8Array(m);
  const count = new Int32Array(m);
  const rep = view.rep;
  for (let i = 0; i < codes.length; i++) {
    const r = rep[i];
    if (r < 0) continue;
    const c = codes[i];
    if (!view.items[r].cluster) { status[r] = c; continue; }
    if (c < 2) continue;
    count[r]++;
    status[r] = status[r] < 2 ? c : status[r] === c ? c : 2;
  }
  return { status, count };
}
