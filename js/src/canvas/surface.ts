/**
 * A pane's DOM: its element, the canvas and its 2D context, the (hidden) tooltip, the size in CSS pixels, the page's
 * theme and the frame scheduling (one draw per animation frame, however many changes asked for one). What is drawn
 * is the pane's business: the surface calls `paint` with a ready context.
 */
import type { Corner } from "./geometry";
import { pickTheme, watchTheme, type Theme } from "./theme";

export interface SurfaceHooks {
  /** draws a frame (the canvas has a size) */
  paint(ctx: CanvasRenderingContext2D, width: number, height: number, dpr: number): void;
  /** the canvas was resized from `oldW` × `oldH` (before the frame drawn for the new size) */
  resized(oldW: number, oldH: number): void;
  /** the theme was read from the page (the first time it was needed, or again after a switch) */
  themed(theme: Theme): void;
  /** the page's theme switched */
  themeChanged(): void;
}

export class PaneSurface {
  readonly el: HTMLDivElement;
  readonly canvas: HTMLCanvasElement;
  readonly tooltip: HTMLDivElement;
  /** resolves once the pane has a size */
  readonly sized: Promise<void>;
  private cssW = 0;
  private cssH = 0;
  private ctx: CanvasRenderingContext2D;
  private frame = 0;
  private current: Theme | null = null;
  private resize!: ResizeObserver;
  private unwatchTheme: () => void;

  constructor(title: string | null, private hooks: SurfaceHooks) {
    ({ el: this.el, canvas: this.canvas, tooltip: this.tooltip } = paneElements(title));
    this.ctx = this.canvas.getContext("2d")!;
    this.sized = watchSize(this.el, (w, h) => this.resized(w, h), (ro) => { this.resize = ro; });
    this.unwatchTheme = watchTheme(this.el, () => hooks.themeChanged());
  }

  get width(): number { return this.cssW; }
  get height(): number { return this.cssH; }

  /** The part of the pane its title covers, from the pane's top-left corner (null: no title, or not laid out). */
  titleBox(): Corner | null {
    const t = this.el.querySelector<HTMLElement>(".gw-pane-title");
    if (!t || t.hidden) return null;
    const r = t.getBoundingClientRect();
    const p = this.el.getBoundingClientRect();
    const box: Corner = { w: r.right - p.left, h: r.bottom - p.top };
    return box.w > 0 && box.h > 0 ? box : null;
  }

  /** The theme, read from the page the first time it is needed. */
  get theme(): Theme {
    if (!this.current) {
      this.current = pickTheme(this.el);
      this.hooks.themed(this.current);
    }
    return this.current;
  }

  /** Reads the theme from the page again (it switched). */
  rereadTheme(): Theme {
    this.current = null;
    return this.theme;
  }

  /** The canvas follows the element's size; the pane decides what the camera does about it. */
  private resized(w: number, h: number): void {
    const oldW = this.cssW, oldH = this.cssH;
    this.cssW = w;
    this.cssH = h;
    const dpr = window.devicePixelRatio || 1;
    this.canvas.width = Math.round(w * dpr);
    this.canvas.height = Math.round(h * dpr);
    this.hooks.resized(oldW, oldH);
    this.drawNow();
  }

  requestDraw(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.drawNow(); });
  }

  drawNow(): void {
    if (this.frame) { cancelAnimationFrame(this.frame); this.frame = 0; }
    if (!this.cssW) return;
    this.hooks.paint(this.ctx, this.cssW, this.cssH, window.devicePixelRatio || 1);
  }

  dispose(): void {
    this.unwatchTheme();
    this.resize.disconnect();
    if (this.frame) cancelAnimationFrame(this.frame);
    this.el.remove();
  }
}

/** The pane's elements: a focusable canvas, the title bar (when titled) and the (hidden) tooltip. */
export function paneElements(title: string | null): { el: HTMLDivElement; canvas: HTMLCanvasElement; tooltip: HTMLDivElement } {
  const el = document.createElement("div");
  el.className = "gw-pane";
  const canvas = document.createElement("canvas");
  canvas.className = "gw-canvas";
  canvas.tabIndex = 0;
  canvas.setAttribute("aria-label", `${title ? `${title}: ` : ""}autograd graph: drag to pan, wheel to zoom, click a node to inspect it`);
  el.appendChild(canvas);
  if (title !== null) {
    const t = document.createElement("div");
    t.className = "gw-pane-title";
    t.textContent = title;
    t.title = title;
    el.appendChild(t);
  }
  const tooltip = document.createElement("div");
  tooltip.className = "gw-tooltip";
  tooltip.hidden = true;
  el.appendChild(tooltip);
  return { el, canvas, tooltip };
}

/**
 * Calls `resized(width, height)` with the element's CSS size whenever it changes (ignoring collapsed sizes);
 * resolves once it has a size. `observer` receives the ResizeObserver (to disconnect it).
 */
export function watchSize(el: HTMLElement, resized: (w: number, h: number) => void, observer: (ro: ResizeObserver) => void): Promise<void> {
  return new Promise((sized) => {
    const ro = new ResizeObserver(() => {
      const r = el.getBoundingClientRect();
      if (r.width < 2 || r.height < 2) return;
      resized(r.width, r.height);
      sized();
    });
    ro.observe(el);
    observer(ro);
  });
}
