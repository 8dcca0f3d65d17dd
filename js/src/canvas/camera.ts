/**
 * The camera of one pane: screen = world × s + (tx, ty), in CSS pixels. Every change is announced to "change"
 * listeners with its reason, so a second pane can follow (the diff view's Sync) and the pane redraws.
 */
import { FIT_PAD } from "../layout/types";

/** A plain camera value (what the renderer and the minimap read). */
export interface CameraState { s: number; tx: number; ty: number; }

/** Why the camera moved: "pan"/"zoom" come from the user dragging or zooming; the rest are set by code. */
export type CameraReason = "pan" | "zoom" | "fit" | "centre" | "anchor" | "sync" | "set";

/** The change from one camera value to the next, as the listeners see it. */
export interface CameraChange { before: CameraState; after: CameraState; reason: CameraReason; }

export type CameraListener = (change: CameraChange) => void;

export const MIN_SCALE = 0.002;
export const MAX_SCALE = 4;

export function clamp(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, v));
}

export class Camera implements CameraState {
  s = 1;
  tx = 0;
  ty = 0;
  private listeners: CameraListener[] = [];

  on(event: "change", cb: CameraListener): void {
    if (event === "change") this.listeners.push(cb);
  }

  off(event: "change", cb: CameraListener): void {
    if (event === "change") this.listeners = this.listeners.filter((f) => f !== cb);
  }

  get state(): CameraState {
    return { s: this.s, tx: this.tx, ty: this.ty };
  }

  /** Sets the whole camera (the scale clamped); listeners hear about it only if something changed. */
  set(s: number, tx: number, ty: number, reason: CameraReason = "set"): void {
    s = clamp(s, MIN_SCALE, MAX_SCALE);
    if (s === this.s && tx === this.tx && ty === this.ty) return;
    const before = this.state;
    this.s = s;
    this.tx = tx;
    this.ty = ty;
    const change: CameraChange = { before, after: this.state, reason };
    for (const f of this.listeners.slice()) f(change);
  }

  /** Moves the drawing by (dx, dy) screen pixels. */
  pan(dx: number, dy: number, reason: CameraReason = "pan"): void {
    this.set(this.s, this.tx + dx, this.ty + dy, reason);
  }

  /** Multiplies the scale by f, keeping the world point under screen point (sx, sy) in place. */
  zoomAt(f: number, sx: number, sy: number, reason: CameraReason = "zoom"): void {
    const s = clamp(this.s * f, MIN_SCALE, MAX_SCALE);
    const k = s / this.s;
    this.set(s, sx - (sx - this.tx) * k, sy - (sy - this.ty) * k, reason);
  }

  /** Puts world point (x, y) at the centre of a w × h viewport, at the current scale or at `s`. */
  centreOn(x: number, y: number, w: number, h: number, s = this.s, reason: CameraReason = "centre"): void {
    const sc = clamp(s, MIN_SCALE, MAX_SCALE);
    this.set(sc, w / 2 - x * sc, h / 2 - y * sc, reason);
  }

  /** The scale and offsets that show bounds [x0, y0, x1, y1] whole in a w × h viewport (never magnified past maxScale). */
  static fitBounds(b: readonly [number, number, number, number], w: number, h: number, pad = FIT_PAD, maxScale = 1.25,
    padRight = pad): CameraState {
    const [x0, y0, x1, y1] = b;
    const s = clamp(Math.min((w - pad - padRight) / Math.max(x1 - x0, 1e-9), (h - 2 * pad) / Math.max(y1 - y0, 1e-9), maxScale), MIN_SCALE, MAX_SCALE);
    return { s, tx: (pad + w - padRight) / 2 - ((x0 + x1) / 2) * s, ty: h / 2 - ((y0 + y1) / 2) * s };
  }

  /** Fits bounds into a w × h viewport (see fitBounds). */
  fit(b: readonly [number, number, number, number], w: number, h: number, pad = FIT_PAD, maxScale = 1.25, reason: CameraReason = "fit"): void {
    const c = Camera.fitBounds(b, w, h, pad, maxScale);
    this.set(c.s, c.tx, c.ty, reason);
  }

  /**
   * Applies to this camera the screen-space motion of another camera's change: the same pan and the same zoom
   * about the same screen point. Two panes showing different drawings keep their own offsets and move in step.
   */
  follow(change: CameraChange, reason: CameraReason = "sync"): void {
    const { before: a, after: b } = change;
    const k = b.s / a.s;
    // screen' = k × screen + (t_after − k × t_before), for any world point of the leading camera
    this.set(this.s * k, k * this.tx + (b.tx - k * a.tx), k * this.ty + (b.ty - k * a.ty), reason);
  }

  toWorld(sx: number, sy: number): [number, number] {
    return [(sx - this.tx) / this.s, (sy - this.ty) / this.s];
  }

  toScreen(wx: number, wy: number): [number, number] {
    return [wx * this.s + this.tx, wy * this.s + this.ty];
  }
}
