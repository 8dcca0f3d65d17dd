/**
 * Diff status on the canvas: a coloured outline and a stripe down the left edge of every changed, added or removed
 * node (dashed outline for a closed group holding such nodes), and, once labels are legible, a badge on the
 * top-right corner: Δ changed, + added, − removed, or the number of such members for a group.
 */
import type { Paint } from "./render";
import { KIND_GROUP, box } from "./shapes";
import { FONT_FAMILY } from "./measure";
import type { Theme } from "./theme";

const CODES = [2, 3, 4] as const;
const SYMBOL: Record<number, string> = { 2: "Δ", 3: "+", 4: "−" };
const BADGE_FONT = `700 10px ${FONT_FAMILY}`;

function colourOf(th: Theme, code: number): string {
  return code === 3 ? th.added : code === 4 ? th.removed : th.changed;
}

/** Outlines and stripes, drawn over the fills and under the selection/search rings. */
export function drawStatus(ctx: CanvasRenderingContext2D, p: Paint, vis: number[], px: number, detailed: boolean, th: Theme): void {
  const st = p.status!;
  const items = p.view.items;
  const radius = (i: number) => (p.kind[i] === KIND_GROUP ? 5 : Math.min(5, items[i].h / 2));
  for (const code of CODES) {
    const nodes: number[] = [], groups: number[] = [];
    for (const i of vis) if (st[i] === code) (p.kind[i] === KIND_GROUP ? groups : nodes).push(i);
    if (!nodes.length && !groups.length) continue;
    const colour = colourOf(th, code);
    ctx.fillStyle = colour;
    ctx.beginPath();
    for (const i of nodes.concat(groups)) {
      const it = items[i];
      ctx.rect(it.x - it.w / 2, it.y - it.h / 2, Math.min(5, it.w / 4), it.h);
    }
    ctx.fill();
    ctx.strokeStyle = colour;
    ctx.lineWidth = Math.max(2.5 * px, 1.5);
    for (const [list, dash] of [[nodes, []], [groups, [6, 3]]] as [number[], number[]][]) {
      if (!list.length) continue;
      ctx.setLineDash(dash.map((d) => d * px));
      ctx.beginPath();
      for (const i of list) { const it = items[i]; box(ctx, it.x - it.w / 2, it.y - it.h / 2, it.w, it.h, radius(i), detailed); }
      ctx.stroke();
    }
    ctx.setLineDash([]);
  }
}

/** The corner badges, drawn last (over labels) and only when labels are drawn. */
export function drawBadges(ctx: CanvasRenderingContext2D, p: Paint, vis: number[], th: Theme): void {
  const st = p.status!;
  const items = p.view.items;
  ctx.font = BADGE_FONT;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  for (const code of CODES) {
    const list = vis.filter((i) => st[i] === code);
    if (!list.length) continue;
    const label = (i: number) => (p.kind[i] === KIND_GROUP ? String(p.statusCount?.[i] ?? "") : SYMBOL[code]);
    ctx.fillStyle = colourOf(th, code);
    ctx.beginPath();
    for (const i of list) {
      const it = items[i];
      const w = Math.max(14, ctx.measureText(label(i)).width + 8);
      const x = it.x + it.w / 2 - w / 2 + 3, y = it.y - it.h / 2;
      if (ctx.roundRect) ctx.roundRect(x - w / 2, y - 7, w, 14, 7); else ctx.rect(x - w / 2, y - 7, w, 14);
    }
    ctx.fill();
    ctx.fillStyle = "#ffffff";
    for (const i of list) {
      const it = items[i];
      const w = Math.max(14, ctx.measureText(label(i)).width + 8);
      ctx.fillText(label(i), it.x + it.w / 2 - w / 2 + 3, it.y - it.h / 2 + 0.5);
    }
  }
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
