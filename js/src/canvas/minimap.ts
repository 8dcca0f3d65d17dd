/**
 * Overview in the corner: every item as a coloured speck, open groups as outlines, plus the viewport rectangle.
 * The specks are drawn once per layout/colour change into a backing canvas; each frame only copies it and draws
 * the rectangle. Click or drag in it to move the view.
 *
 * It stays out of the drawing's way: the pane hides it when the whole drawing is on screen and folds it to its
 * button (in the zoom controls) when it would cover a node; that button shows or hides it, and the user's choice
 * then holds.
 */
import { bucketOf, fillAt } from "../model/colour";
import type { CameraState } from "./camera";
import { viewBounds } from "./geometry";
import type { ViewGraph } from "../model/view";
import { LIGHT, type Theme } from "./theme";


export const MINIMAP_W = 180;
export const MINIMAP_H = 120;

export class Minimap {
  readonly el: HTMLCanvasElement;
  /** the show/hide button (the pane puts it with its zoom controls) */
  readonly button: HTMLButtonElement;
  private base: HTMLCanvasElement;
  private scale = 1;
  private ox = 0;
  private oy = 0;
  private dpr = 1;
  private theme: Theme = LIGHT;
  /** what the pane would like (shown unless it would be in the way) and what the user chose, if anything */
  private wanted = false;
  private chosen: boolean | null = null;

  constructor(parent: HTMLElement, private onCentre: (wx: number, wy: number) => void) {
    this.el = document.createElement("canvas");
    this.el.className = "gw-minimap";
    this.el.title = "Overview: click or drag to move the view";
    this.el.hidden = true;
    this.base = document.createElement("canvas");
    parent.appendChild(this.el);
    this.button = document.createElement("button");
    this.button.type = "button";
    this.button.className = "gw-maptoggle";
    this.button.textContent = "▣";
    this.button.setAttribute("data-action", "minimap");
    this.button.addEventListener("click", () => { this.chosen = this.el.hidden; this.apply(); });
    this.apply();
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

  /** The pane's preference: shown (true) or out of the way (false); the user's choice, once made, wins. */
  auto(show: boolean): void {
    this.wanted = show;
    this.apply();
  }

  get shown(): boolean {
    return !this.el.hidden;
  }

  private apply(): void {
    const show = this.chosen ?? this.wanted;
    this.el.hidden = !show;
    this.button.setAttribute("aria-pressed", String(show));
    const what = show ? "Hide the overview map" : "Show the overview map";
    this.button.title = what;
    this.button.setAttribute("aria-label", what);
  }

  /** Where the minimap sits (shown or not) relative to `host`'s top-left, in CSS pixels, or null if not laid out. */
  rectIn(host: HTMLElement): { left: number; top: number; right: number; bottom: number } | null {
    const hidden = this.el.hidden;
    if (hidden) { this.el.style.visibility = "hidden"; this.el.hidden = false; }
    const r = this.el.getBoundingClientRect();
    if (hidden) { this.el.hidden = true; this.el.style.visibility = ""; }
    const h = host.getBoundingClientRect();
    if (!r.width) return null;
    const pad = 6; // keep a little air between a node and the overlay
    return { left: r.left - h.left - pad, top: r.top - h.top - pad, right: r.right - h.left + pad, bottom: r.bottom - h.top + pad };
  }

  setTheme(th: Theme): void {
    this.theme = th;
  }

  /** Redraws the specks (after a layout or a colour change). */
  update(view: ViewGraph, t: Float64Array, hot: Uint8Array, status: Uint8Array | null = null): void {
    this.dpr = window.devicePixelRatio || 1;
    for (const c of [this.el, this.base]) { c.width = MINIMAP_W * this.dpr; c.height = MINIMAP_H * this.dpr; }
    const [x0, y0, x1, y1] = viewBounds(view) ?? [0, 0, 1, 1];
    const pad = 6;
    this.scale = Math.min((MINIMAP_W - 2 * pad) / Math.max(1, x1 - x0), (MINIMAP_H - 2 * pad) / Math.max(1, y1 - y0));
    this.ox = pad - x0 * this.scale + ((MINIMAP_W - 2 * pad) - (x1 - x0) * this.scale) / 2;
    this.oy = pad - y0 * this.scale + ((MINIMAP_H - 2 * pad) - (y1 - y0) * this.scale) / 2;
    const ctx = this.base.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.clearRect(0, 0, MINIMAP_W, MINIMAP_H);
    const s = this.scale;
    const th = this.theme;
    ctx.strokeStyle = th.frameStroke;
    ctx.lineWidth = 0.6;
    for (const f of view.frames) ctx.strokeRect(this.ox + (f.x - f.w / 2) * s, this.oy + (f.y - f.h / 2) * s, f.w * s, f.h * s);
    const rank = (i: number) => (status && status[i] >= 2 ? 2 : hot[i]);
    const order = view.items.map((_, i) => i).sort((a, b) => rank(a) - rank(b)); // hot ones, then changes, on top
    for (const i of order) {
      const it = view.items[i];
      const b = bucketOf(t[i]);
      // diff status specks (the theme's status colours) on top, so changes can be found in a big graph
      const st = status && status[i] >= 2 ? (status[i] === 3 ? th.added : status[i] === 4 ? th.removed : th.changed) : null;
      // the palette's receding end would vanish into the background: low and missing values become plain specks
      ctx.fillStyle = st ?? (hot[i] ? th.hot : b < 6 ? th.speck : fillAt(t[i], th.dark));
      const big = hot[i] || st;
      const w = Math.max(big ? 3 : 1.2, it.w * s), h = Math.max(big ? 3 : 1.2, it.h * s);
      ctx.fillRect(this.ox + it.x * s - w / 2, this.oy + it.y * s - h / 2, w, h);
    }
  }

  /** Copies the specks and draws the current viewport. */
  frame(cam: CameraState, cssW: number, cssH: number): void {
    if (this.el.hidden) return;
    const ctx = this.el.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, this.el.width, this.el.height);
    ctx.drawImage(this.base, 0, 0);
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    const s = this.scale;
    const x = this.ox + (-cam.tx / cam.s) * s, y = this.oy + (-cam.ty / cam.s) * s;
    ctx.strokeStyle = this.theme.viewport;
    ctx.lineWidth = 1.5;
    ctx.globalAlpha = 0.1;
    ctx.fillStyle = this.theme.viewport;
    ctx.fillRect(x, y, (cssW / cam.s) * s, (cssH / cam.s) * s);
    ctx.globalAlpha = 1;
    ctx.strokeRect(x, y, (cssW / cam.s) * s, (cssH / cam.s) * s);
  }
}
