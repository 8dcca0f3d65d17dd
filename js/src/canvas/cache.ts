/**
 * The last full frame of a big drawing, kept as a bitmap and drawn moved and scaled while the user pans or zooms,
 * until the gesture rests; then the pane draws in full again.
 *
 * Why: what costs a big drawing its frame rate is not building the frame (canvas calls) but rasterising it —
 * tens of thousands of edge curves and boxes, in software where the browser has no GPU — and that cost comes back
 * with every wheel step. One bitmap copy per full frame and one drawImage per gesture frame cost the same at any
 * graph size. Only drawings with more than CACHE_FROM items and edges on screen are cached: a small one draws in
 * full each frame, as sharp as ever.
 */
import type { CameraState } from "./camera";

/** Items plus edges on screen from which a full frame is worth keeping as a bitmap. */
export const CACHE_FROM = 3000;
/** How far a gesture may zoom the bitmap before a full frame replaces it (it blurs, or shrinks to a patch). */
const MAX_STRETCH = 2;
/** How long after the last pan or zoom step the gesture counts as ended (ms): then a full frame is drawn. */
export const SETTLE_MS = 140;

export class FrameCache {
  private bitmap: HTMLCanvasElement | OffscreenCanvas | null = null;
  private cam: CameraState | null = null;
  private owner: unknown = null;
  private lastGesture = -Infinity;
  private settle = 0;

  /** `redraw`: draws the pane in full (called once a gesture rests). */
  constructor(private redraw: () => void) {}

  /** A pan or zoom step by the user (or a pane synced to one): frames drawn until it rests may come from the bitmap. */
  gesture(): void {
    this.lastGesture = performance.now();
    clearTimeout(this.settle);
    this.settle = window.setTimeout(() => { this.lastGesture = -Infinity; this.redraw(); }, SETTLE_MS);
  }

  /**
   * Whether this frame may be drawn from the bitmap: inside a gesture, with a bitmap of the same drawing at this
   * size, seen from a camera near enough to `cam` (zoomed by under MAX_STRETCH, moved by under half the view) that
   * the bitmap still reads and still covers most of the pane; else a full frame is drawn (and kept).
   */
  usable(owner: unknown, width: number, height: number, cam: CameraState, dpr: number): boolean {
    const c = this.cam;
    if (!this.bitmap || !c || this.owner !== owner || performance.now() - this.lastGesture >= SETTLE_MS ||
      this.bitmap.width !== width || this.bitmap.height !== height) return false;
    const k = cam.s / c.s;
    if (k > MAX_STRETCH || k < 1 / MAX_STRETCH) return false;
    // where the bitmap's corner lands, in canvas pixels
    const dx = (cam.tx - k * c.tx) * dpr, dy = (cam.ty - k * c.ty) * dpr;
    return Math.abs(dx) < width / 2 && Math.abs(dy) < height / 2 && Math.abs(dx + width * (k - 1)) < width / 2 &&
      Math.abs(dy + height * (k - 1)) < height / 2;
  }

  /**
   * Draws the bitmap where the camera `cam` puts it (canvas pixels: world × s + t, times dpr), on the background;
   * what the bitmap does not cover stays background until the full frame.
   */
  drawMoved(ctx: CanvasRenderingContext2D, cam: CameraState, dpr: number, bg: string): void {
    const c = this.cam!, k = cam.s / c.s;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = bg;
    ctx.fillRect(0, 0, ctx.canvas.width, ctx.canvas.height);
    ctx.imageSmoothingEnabled = true;
    ctx.setTransform(k, 0, 0, k, (cam.tx - k * c.tx) * dpr, (cam.ty - k * c.ty) * dpr);
    ctx.drawImage(this.bitmap as CanvasImageSource, 0, 0);
    ctx.setTransform(1, 0, 0, 1, 0, 0);
  }

  /** Keeps the frame just drawn on `canvas` (the drawing `owner`, seen with camera `cam`), or forgets it when the
   * frame was small (`items` on screen under CACHE_FROM). */
  store(canvas: HTMLCanvasElement, cam: CameraState, owner: unknown, items: number): void {
    if (items < CACHE_FROM) { this.forget(); return; }
    if (!this.bitmap || this.bitmap.width !== canvas.width || this.bitmap.height !== canvas.height) {
      this.bitmap = typeof OffscreenCanvas !== "undefined" ? new OffscreenCanvas(canvas.width, canvas.height)
        : Object.assign(document.createElement("canvas"), { width: canvas.width, height: canvas.height });
    }
    const b = this.bitmap.getContext("2d") as CanvasRenderingContext2D | OffscreenCanvasRenderingContext2D | null;
    if (!b) { this.forget(); return; }
    b.setTransform(1, 0, 0, 1, 0, 0);
    b.clearRect(0, 0, canvas.width, canvas.height);
    b.drawImage(canvas, 0, 0);
    this.cam = { s: cam.s, tx: cam.tx, ty: cam.ty };
    this.owner = owner;
  }

  forget(): void {
    this.bitmap = null;
    this.cam = null;
    this.owner = null;
  }

  dispose(): void {
    clearTimeout(this.settle);
    this.forget();
  }
}
