/**
 * Wrapping a tall drawing into columns. A deep network laid out top to bottom is a tall thin column: fitted to a
 * pane it is a sliver, and shown legibly only its top is on screen. So a drawing (or a frame's contents) that
 * cannot fit the pane's height at a legible zoom, and is taller than the pane's shape, is cut between its rows into
 * columns placed side by side, as text flows into the next column of a page: the cut that fits the pane best wins.
 *
 * An edge between two columns leaves its column at the bottom, runs up the gap to its right, across the top and
 * down into the next column, so it never crosses a node. Ports (where edges enter or leave a frame) stay on the
 * frame's top and bottom: an entering edge drops into its column from above, a leaving one from below its column.
 */
import { fitRoom, LEGIBLE_SCALE, RANK_SEP, type LayoutInput, type LayoutResult } from "./types";
import { layeredLayout } from "./layered";

/** Space between columns: the edges from one column to the next run in it. */
export const GUTTER = 56;
const MARGIN = RANK_SEP / 2;
const MAX_COLUMNS = 12;

export interface PaneSize { w: number; h: number; }

/** What a wrap did: the drawing's new bounds (its columns, the margins edges use) and how many columns. */
export interface Wrapped { x0: number; y0: number; x1: number; y1: number; columns: number; }

interface Band { r0: number; r1: number; top: number; bottom: number; left: number; right: number; X: number; }

/**
 * Wraps `res` (nodes sized w × h; `pin`: 1 for a port on the top row, 2 on the bottom) in place when that fits the
 * pane better; returns what it did, or null (then nothing changed).
 */
export function wrapColumns(res: LayoutResult, w: ArrayLike<number>, h: ArrayLike<number>, src: ArrayLike<number>, dst: ArrayLike<number>,
  pin: Uint8Array | undefined, pane: PaneSize): Wrapped | null {
  const n = w.length;
  const real: number[] = [];
  for (let i = 0; i < n; i++) if (!pin || !pin[i]) real.push(i);
  if (real.length < 4) return null;
  // rows: the y-intervals of real nodes, overlapping ones merged; cuts go between rows only
  real.sort((a, b) => (res.y[a] - h[a] / 2) - (res.y[b] - h[b] / 2));
  const rows: { top: number; bottom: number }[] = [];
  let X0 = Infinity, X1 = -Infinity;
  for (const i of real) {
    const t = res.y[i] - h[i] / 2, b = res.y[i] + h[i] / 2;
    X0 = Math.min(X0, res.x[i] - w[i] / 2); X1 = Math.max(X1, res.x[i] + w[i] / 2);
    const last = rows[rows.length - 1];
    if (last && t < last.bottom) last.bottom = Math.max(last.bottom, b);
    else rows.push({ top: t, bottom: b });
  }
  if (rows.length < 4) return null;
  const Y0 = rows[0].top, Y1 = rows[rows.length - 1].bottom;
  const W0 = X1 - X0, H0 = Y1 - Y0;
  const room = fitRoom(pane.w, pane.h), TW = Math.max(room.w, 100), TH = Math.max(room.h, 100);
  if (H0 * LEGIBLE_SCALE <= TH || H0 / Math.max(W0, 1) <= TH / TW) return null;
  const s1 = Math.min(TW / W0, TH / H0);
  const rowOfY = (y: number): number => {
    let lo = 0, hi = rows.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((rows[mid - 1].bottom + rows[mid].top) / 2 <= y) lo = mid; else hi = mid - 1;
    }
    return lo;
  };
  // x extents per row (nodes and the route points in it: long edges bend beside the nodes)
  const rl = new Float64Array(rows.length).fill(Infinity), rr = new Float64Array(rows.length).fill(-Infinity);
  for (const i of real) {
    const r = rowOfY(res.y[i]);
    rl[r] = Math.min(rl[r], res.x[i] - w[i] / 2); rr[r] = Math.max(rr[r], res.x[i] + w[i] / 2);
  }
  for (let k = 0; k < res.pts.length; k += 2) {
    const y = res.pts[k + 1];
    if (y < Y0 || y > Y1) continue;
    const r = rowOfY(y);
    rl[r] = Math.min(rl[r], res.pts[k]); rr[r] = Math.max(rr[r], res.pts[k]);
  }
  let best: Band[] | null = null, bestS = s1 * 1.1;
  for (let k = 2; k <= Math.min(MAX_COLUMNS, rows.length); k++) {
    const bands = cut(rows, rl, rr, k, H0);
    const width = bands.reduce((a, b) => a + b.right - b.left, 0) + (bands.length - 1) * GUTTER;
    const height = Math.max(...bands.map((b) => b.bottom - b.top)) + 2 * MARGIN;
    const s = Math.min(TW / width, TH / height);
    if (s > bestS) { bestS = s; best = bands; }
    if (width / height > 2 * (TW / TH)) break;
  }
  if (!best) return null;
  return apply(res, w, h, src, dst, pin, rows, rowOfY, best, Y0);
}

/** A layout shaped to the pane (when its size is known): too wide, its layers folded; too tall, in columns. */
export function fitPane(inp: LayoutInput, res: LayoutResult): LayoutResult {
  if (!inp.pane) return res;
  const rowW = foldWidth(res, inp.w, inp.h, inp.pin, inp.pane);
  if (rowW !== null) {
    const again = layeredLayout({ ...inp, maxRowW: rowW });
    again.ms += res.ms;
    res = again;
  }
  const wrapped = wrapColumns(res, inp.w, inp.h, inp.src, inp.dst, inp.pin, inp.pane);
  if (wrapped) res.wrapped = wrapped;
  return res;
}

/**
 * The other way round: a drawing too wide for the pane at a legible zoom, and wider than the pane's shape (a fan of
 * a dozen look-alike ops side by side), is laid out again with its wide layers folded onto several rows, no wider
 * than the pane shows legibly. Returns the layered layout's row width to use, or null when it fits as it is.
 */
export function foldWidth(res: LayoutResult, w: ArrayLike<number>, h: ArrayLike<number>, pin: Uint8Array | undefined, pane: PaneSize): number | null {
  let X0 = Infinity, X1 = -Infinity, Y0 = Infinity, Y1 = -Infinity, n = 0;
  for (let i = 0; i < w.length; i++) {
    if (pin && pin[i]) continue;
    n++;
    X0 = Math.min(X0, res.x[i] - w[i] / 2); X1 = Math.max(X1, res.x[i] + w[i] / 2);
    Y0 = Math.min(Y0, res.y[i] - h[i] / 2); Y1 = Math.max(Y1, res.y[i] + h[i] / 2);
  }
  if (n < 4) return null;
  const room = fitRoom(pane.w, pane.h), TW = Math.max(room.w, 100), TH = Math.max(room.h, 100);
  const W0 = X1 - X0, H0 = Math.max(Y1 - Y0, 1);
  if (W0 * LEGIBLE_SCALE <= TW || W0 / H0 <= TW / TH) return null;
  return TW / LEGIBLE_SCALE;
}

/** Cuts the rows into k bands of about equal height (whole rows each). */
function cut(rows: { top: number; bottom: number }[], rl: Float64Array, rr: Float64Array, k: number, H: number): Band[] {
  const bands: Band[] = [];
  const Y0 = rows[0].top;
  let start = 0;
  for (let b = 0; b < k && start < rows.length; b++) {
    let end = start;
    const limit = Y0 + ((b + 1) * H) / k;
    while (end < rows.length - 1 && (b === k - 1 || rows[end + 1].bottom <= limit || end === start)) end++;
    if (b === k - 1) end = rows.length - 1;
    let left = Infinity, right = -Infinity;
    for (let r = start; r <= end; r++) { left = Math.min(left, rl[r]); right = Math.max(right, rr[r]); }
    bands.push({ r0: start, r1: end, top: rows[start].top, bottom: rows[end].bottom, left, right, X: 0 });
    start = end + 1;
  }
  return bands;
}

function apply(res: LayoutResult, w: ArrayLike<number>, h: ArrayLike<number>, src: ArrayLike<number>, dst: ArrayLike<number>,
  pin: Uint8Array | undefined, rows: { top: number; bottom: number }[], rowOfY: (y: number) => number, bands: Band[], Y0: number): Wrapped {
  const bandOfRow = new Int32Array(rows.length);
  bands.forEach((b, k) => { for (let r = b.r0; r <= b.r1; r++) bandOfRow[r] = k; });
  bands[0].X = bands[0].left;
  for (let k = 1; k < bands.length; k++) bands[k].X = bands[k - 1].X + bands[k - 1].right - bands[k - 1].left + GUTTER;
  const colTop = Y0 + MARGIN;
  const maxH = Math.max(...bands.map((b) => b.bottom - b.top));
  const bottom = colTop + maxH + MARGIN;
  const bandOfY = (y: number) => bandOfRow[rowOfY(y)];
  const dx = (b: number) => bands[b].X - bands[b].left;
  const dy = (b: number) => colTop - bands[b].top;
  const n = w.length;
  const last = bands.length - 1;
  // a node's column; a port's is where its row is (the top row is in the first, the bottom row in the last)
  const band = new Int32Array(n);
  for (let i = 0; i < n; i++) band[i] = pin && pin[i] === 1 ? 0 : pin && pin[i] === 2 ? last : bandOfY(res.y[i]);
  const pts: number[] = [];
  const ptOff = new Int32Array(src.length + 1);
  for (let e = 0; e < src.length; e++) {
    const a = src[e], b = dst[e];
    const P = res.pts.subarray(res.ptOff[e], res.ptOff[e + 1]);
    const ba = band[a], bb = band[b];
    const out: number[] = [];
    if (bb <= ba) {
      // one column (or an edge going back up, only in a cycle): every point moves with its source's column
      for (let k = 0; k < P.length; k += 2) out.push(P[k] + dx(ba), P[k + 1] + dy(ba));
    } else {
      // the part in the source's column, and the part in the target's column; what lay between is not drawn there
      const end = P.length - 2;
      const head = [P[0] + dx(ba), P[1] + dy(ba)];
      let k = 2;
      while (k < end && bandOfY(P[k + 1]) === ba) { head.push(P[k] + dx(ba), P[k + 1] + dy(ba)); k += 2; }
      let j = end - 2;
      while (j >= k && bandOfY(P[j + 1]) === bb) j -= 2;
      const tail: number[] = [];
      for (let q = j + 2; q <= end; q += 2) tail.push(P[q] + dx(bb), P[q + 1] + dy(bb));
      const xa = head[head.length - 2];
      if (pin && pin[a] === 1) out.push(tail[0], Y0, ...tail); // enters the frame straight above its column
      else if (pin && pin[b] === 2) out.push(...head, xa, bottom + MARGIN); // leaves it straight below its column
      else {
        const below = colTop + bands[ba].bottom - bands[ba].top + MARGIN / 2;
        const gx = bands[ba].X + bands[ba].right - bands[ba].left + GUTTER / 2;
        const above = Y0 + MARGIN / 2;
        out.push(...head, xa, below, gx, below, gx, above, tail[0], above, ...tail);
      }
    }
    ptOff[e + 1] = ptOff[e] + out.length;
    for (const v of out) pts.push(v);
  }
  for (let i = 0; i < n; i++) {
    if (pin && pin[i]) { if (pin[i] === 2) res.y[i] = bottom + MARGIN; continue; }
    res.x[i] += dx(band[i]);
    res.y[i] += dy(band[i]);
  }
  // a port's own point is the first (entering) or last (leaving) point of its edge
  for (let e = 0; e < src.length; e++) {
    if (pin && pin[src[e]] === 1) res.x[src[e]] = pts[ptOff[e]];
    if (pin && pin[dst[e]] === 2) res.x[dst[e]] = pts[ptOff[e + 1] - 2];
  }
  res.pts = Float32Array.from(pts);
  res.ptOff = ptOff;
  const lb = bands[last];
  return { x0: bands[0].X, y0: Y0, x1: lb.X + lb.right - lb.left, y1: bottom, columns: bands.length };
}
