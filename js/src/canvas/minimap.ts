/**
 * Overview in the corner: every item as a coloured speck, plus the viewport rectangle. The specks are drawn once
 * per layout/colour change into a backing canvas; each frame only copies it and draws the rectangle.
 * Click or drag in it to move the view.
 */
import { BUCKET_COLOURS, bucketOf } from "../model/colour";
import type { CameraState } from "./camera";

const MISSING_GREY = "#b8bec8";
/** diff status specks (changed, added, removed), drawn on top so changes can be found in a big graph */
const STATUS_SPECK: Record<number, string> = { 2: "#d97706", 3: "#16a34a", 4: "#dc2626" };
import type { ViewGraph } from "../model/view";

export const MINIMAP_W = 180;
export const MINIMAP_H = 120;

export class Minimap {
  readonly el: HTMLCanvasElement;
  private base: HTMLCanvasElement;
  private scale = 1;
  private ox = 0;
  private oy = 0;
  private dpr = 1;

  constructor(parent: HTMLElement, private onCentre: (wx: number, wy: number) => void) {
    this.el = document.createElement("canvas");
    this.el.className = "gw-minimap";
    this.el.title = "Overview: click or drag to move the view";
    this.base = document.createElement("canvas");
    parent.appendChild(this.el);
    let dragging = false;
    const go = (ev: PointerEvent) => {
      const r = this.el.getBoundingClientRect();
      const k = MINIMAP_W / (r.width || MINIMAP_W); // drawn at 180 × 120, possibly shown smaller by the stylesheet
      this.onCentre(((ev.clientX - r.left) * k - this.ox) / this.scale, ((ev.clientY - r.top) * k - this.oy) / this.scale);
    };
    this.el.addEventListener("pointerdown", (ev) => { dragging = true; this.el.setPointerCapture(ev.pointerId); go(ev); ev.stopPropagation(); });
    this.el.addEventListener("pointermove", (ev) => { if (dragging) go(ev); });
    this.el.addEventListener("pointerup", () => { dragging = false; });
  }

  /** Redraws the specks (after a layout or a colour change). */
  update(view: ViewGraph, t: Float64Array, hot: Uint8Array, status: Uint8Array | null = null): void {
    this.dpr = window.devicePixelRatio || 1;
    for (const c of [this.el, this.base]) { c.width = MINIMAP_W * this.dpr; c.height = MINIMAP_H * this.dpr; }
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (const it of view.items) {
      x0 = Math.min(x0, it.x - it.w / 2); x1 = Math.max(x1, it.x + it.w / 2);
      y0 = Math.min(y0, it.y - it.h / 2); y1 = Math.max(y1, it.y + it.h / 2);
    }
    if (!Number.isFinite(x0)) { x0 = y0 = 0; x1 = y1 = 1; }
    const pad = 6;
    this.scale = Math.min((MINIMAP_W - 2 * pad) / Math.max(1, x1 - x0), (MINIMAP_H - 2 * pad) / Math.max(1, y1 - y0));
    this.ox = pad - x0 * this.scale + ((MINIMAP_W - 2 * pad) - (x1 - x0) * this.scale) / 2;
    this.oy = pad - y0 * this.scale + ((MINIMAP_H - 2 * pad) - (y1 - y0) * this.scale) / 2;
    const ctx = this.base.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.clearRect(0, 0, MINIMAP_W, MINIMAP_H);
    const s = this.scale;
    const rank = (i: number) => (status && status[i] >= 2 ? 2 : hot[i]);
    const order = view.items.map((_, i) => i).sort((a, b) => rank(a) - rank(b)); // hot ones, then changes, on top
    for (const i of order) {
      const it = view.items[i];
      const b = bucketOf(t[i]);
      const st = status && status[i] >= 2 ? STATUS_SPECK[status[i]] : null;
      // the palette's pale end would vanish on white here: low and missing values become grey specks
      ctx.fillStyle = st ?? (hot[i] ? "#7f1d1d" : b < 0 ? MISSING_GREY : b < 6 ? "#c3c8d0" : BUCKET_COLOURS[b]);
      const big = hot[i] || st;
      const w = Math.max(big ? 3 : 1.2, it.w * s), h = Math.max(big ? 3 : 1.2, it.h * s);
      ctx.fillRect(this.ox + it.x * s - w / 2, this.oy + it.y * s - h / 2, w, h);
    }
  }

  /** Copies the specks and draws the current viewport. */
  frame(cam: CameraState, cssW: number, cssH: number): void {
    const ctx = this.el.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, this.el.width, this.el.height);
    ctx.drawImage(this.base, 0, 0);
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    const s = this.scale;
    const x = this.ox + (-cam.tx / cam.s) * s, y = this.oy + (-cam.ty / cam.s) * s;
    ctx.strokeStyle = "#2563eb";
    ctx.lineWidth = 1.5;
    ctx.fillStyle = "rgba(37,99,235,0.08)";
    ctx.fillRect(x, y, (cssW / cam.s) * s, (cssH / cam.s) * s);
    ctx.strokeRect(x, y, (cssW / cam.s) * s, (cssH / cam.s) * s);
  }
}
