/**
 * A linear-time layered (Sugiyama-style) layout for graphs too big for dagre.
 *   1. cycle breaking: DFS back edges are reversed (collapsed groups can form cycles)
 *   2. layering: longest path to a sink, so every node sits just above its first consumer (leaves such as
 *      weights stay next to the op that uses them instead of all floating to the top row)
 *   3. dummy nodes on long edges, within a budget (a weight used everywhere would otherwise cost O(V·E))
 *   4. ordering: DFS pre-order start, then barycenter sweeps down and up, each O(V + E) plus a sort per layer
 *   5. x coordinates: each sweep pulls nodes towards the mean of their neighbours, then restores the order and the
 *      minimum gaps with pool-adjacent-violators (isotonic regression), O(layer size) per layer
 * Isolated nodes are packed in a grid below the rest so a 0-edge graph is a block, not one endless row.
 */
import { MAX_ROW_W, NODE_SEP, RANK_SEP, type LayoutInput, type LayoutResult } from "./types";

const ORDER_SWEEPS = 4;
const COORD_SWEEPS = 6;

interface Csr { off: Int32Array; adj: Int32Array; }

function csr(n: number, from: ArrayLike<number>, to: ArrayLike<number>, m: number): Csr {
  const off = new Int32Array(n + 1);
  for (let k = 0; k < m; k++) off[from[k] + 1]++;
  for (let i = 0; i < n; i++) off[i + 1] += off[i];
  const fill = off.slice(0, n);
  const adj = new Int32Array(m);
  for (let k = 0; k < m; k++) adj[fill[from[k]]++] = to[k];
  return { off, adj };
}

/** Marks DFS back edges (iterative: deep chains would overflow a recursive DFS, worker stacks are small). */
export function backEdges(n: number, src: Int32Array, dst: Int32Array): Uint8Array {
  const m = src.length;
  const ids = new Int32Array(m).map((_, k) => k);
  const out = csr(n, src, ids, m); // adj holds edge ids
  const state = new Uint8Array(n); // 0 new, 1 on stack, 2 done
  const rev = new Uint8Array(m);
  const stack = new Int32Array(n);
  const it = new Int32Array(n);
  for (let s = 0; s < n; s++) {
    if (state[s]) continue;
    let top = 0;
    stack[0] = s;
    it[s] = out.off[s];
    state[s] = 1;
    while (top >= 0) {
      const v = stack[top];
      if (it[v] < out.off[v + 1]) {
        const e = out.adj[it[v]++];
        const w = dst[e];
        if (state[w] === 1) rev[e] = 1;
        else if (state[w] === 0) { state[w] = 1; it[w] = out.off[w]; stack[++top] = w; }
      } else { state[v] = 2; top--; }
    }
  }
  return rev;
}

/** Layer of each node, 0 = top; edges a→b of the DAG always have layer[a] < layer[b]. */
export function longestPathLayers(n: number, a: Int32Array, b: Int32Array): Int32Array {
  const m = a.length;
  const outDeg = new Int32Array(n);
  for (let k = 0; k < m; k++) outDeg[a[k]]++;
  const inc = csr(n, b, a, m); // predecessors
  const rank = new Int32Array(n); // longest path to a sink
  const queue = new Int32Array(n);
  let head = 0, tail = 0;
  for (let i = 0; i < n; i++) if (outDeg[i] === 0) queue[tail++] = i;
  while (head < tail) {
    const v = queue[head++];
    for (let k = inc.off[v]; k < inc.off[v + 1]; k++) {
      const u = inc.adj[k];
      if (rank[v] + 1 > rank[u]) rank[u] = rank[v] + 1;
      if (--outDeg[u] === 0) queue[tail++] = u;
    }
  }
  let max = 0;
  for (let i = 0; i < n; i++) if (rank[i] > max) max = rank[i];
  const layer = new Int32Array(n);
  for (let i = 0; i < n; i++) layer[i] = max - rank[i];
  return layer;
}

/** Pinned nodes to the top row (1) or a row of their own at the bottom (2); the others move down one row if
 * anything is pinned to the top, so edges still go downwards. */
function pinLayers(layer: Int32Array, pin: Uint8Array): void {
  let top = false, min = Infinity, max = -Infinity;
  for (let i = 0; i < layer.length; i++) {
    if (pin[i] === 1) top = true;
    if (!pin[i]) { min = Math.min(min, layer[i]); max = Math.max(max, layer[i]); }
  }
  if (!Number.isFinite(min)) { min = 0; max = -1; }
  const shift = (top ? 1 : 0) - min;
  for (let i = 0; i < layer.length; i++) layer[i] = pin[i] === 1 ? 0 : pin[i] === 2 ? max + shift + 1 : layer[i] + shift;
}

/** Least-squares positions keeping order and minimum gaps: pool adjacent violators on x_i - offset_i. */
export function placeRow(desired: Float64Array, weight: Float64Array, gapBefore: Float64Array, out: Float64Array): void {
  const k = desired.length;
  const off = new Float64Array(k);
  for (let i = 1; i < k; i++) off[i] = off[i - 1] + gapBefore[i];
  const bw = new Float64Array(k); // block weight
  const bv = new Float64Array(k); // block mean
  const bn = new Int32Array(k); // block length
  let nb = 0;
  for (let i = 0; i < k; i++) {
    bw[nb] = weight[i];
    bv[nb] = desired[i] - off[i];
    bn[nb] = 1;
    nb++;
    while (nb > 1 && bv[nb - 2] > bv[nb - 1]) {
      const w = bw[nb - 2] + bw[nb - 1];
      bv[nb - 2] = (bv[nb - 2] * bw[nb - 2] + bv[nb - 1] * bw[nb - 1]) / w;
      bw[nb - 2] = w;
      bn[nb - 2] += bn[nb - 1];
      nb--;
    }
  }
  let i = 0;
  for (let b = 0; b < nb; b++) for (let j = 0; j < bn[b]; j++, i++) out[i] = bv[b] + off[i];
}

export function layeredLayout(inp: LayoutInput): LayoutResult {
  const t0 = performance.now();
  const n = inp.w.length;
  const m = inp.src.length;
  const rev = backEdges(n, inp.src, inp.dst);
  const A = new Int32Array(m);
  const B = new Int32Array(m);
  for (let k = 0; k < m; k++) { A[k] = rev[k] ? inp.dst[k] : inp.src[k]; B[k] = rev[k] ? inp.src[k] : inp.dst[k]; }
  const degree = new Int32Array(n);
  for (let k = 0; k < m; k++) { degree[A[k]]++; degree[B[k]]++; }
  const layer0 = longestPathLayers(n, A, B);
  if (inp.pin) pinLayers(layer0, inp.pin);

  // ---- dummies for long edges, shortest spans first, within a budget ----
  const budget = Math.max(4000, 2 * n);
  const spanOrder = Array.from({ length: m }, (_, k) => k).sort((p, q) => (layer0[B[p]] - layer0[A[p]]) - (layer0[B[q]] - layer0[A[q]]));
  const dummyStart = new Int32Array(m).fill(-1);
  let D = 0;
  for (const k of spanOrder) {
    const span = layer0[B[k]] - layer0[A[k]];
    if (span <= 1) continue;
    if (D + span - 1 > budget) break;
    dummyStart[k] = n + D;
    D += span - 1;
  }
  const V = n + D;
  const layer = new Int32Array(V);
  layer.set(layer0);
  const vw = new Float64Array(V);
  const vh = new Float64Array(V);
  vw.set(inp.w);
  vh.set(inp.h);
  const ea: number[] = [];
  const eb: number[] = [];
  for (let k = 0; k < m; k++) {
    if (dummyStart[k] < 0) { ea.push(A[k]); eb.push(B[k]); continue; }
    let prev = A[k];
    const span = layer0[B[k]] - layer0[A[k]];
    for (let j = 0; j < span - 1; j++) {
      const d = dummyStart[k] + j;
      layer[d] = layer0[A[k]] + 1 + j;
      ea.push(prev); eb.push(d);
      prev = d;
    }
    ea.push(prev); eb.push(B[k]);
  }
  const M = ea.length;
  const down = csr(V, ea, eb, M); // successors
  const up = csr(V, eb, ea, M); // predecessors

  // ---- layers (isolated real nodes are set aside) ----
  let L = 0;
  for (let v = 0; v < V; v++) if (layer[v] + 1 > L) L = layer[v] + 1;
  const isolated: number[] = [];
  const pos = new Float64Array(V); // normalised position within the layer, for barycenters
  const rows: number[][] = Array.from({ length: L }, () => []);
  // DFS pre-order from the sources gives neighbouring subtrees neighbouring positions before any sweep
  const seen = new Uint8Array(V);
  const stack: number[] = [];
  for (let s = 0; s < V; s++) {
    if (seen[s] || up.off[s + 1] > up.off[s]) continue;
    if (s < n && degree[s] === 0) { seen[s] = 1; isolated.push(s); continue; }
    stack.push(s);
    while (stack.length) {
      const v = stack.pop() as number;
      if (seen[v]) continue;
      seen[v] = 1;
      rows[layer[v]].push(v);
      for (let k = down.off[v + 1] - 1; k >= down.off[v]; k--) if (!seen[down.adj[k]]) stack.push(down.adj[k]);
    }
  }
  for (let v = 0; v < V; v++) if (!seen[v]) rows[layer[v]].push(v); // unreachable only through bad input
  const setPos = (row: number[]) => { for (let i = 0; i < row.length; i++) pos[row[i]] = (i + 0.5) / row.length; };
  rows.forEach(setPos);

  const bary = new Float64Array(V);
  const sweep = (l: number, g: Csr) => {
    const row = rows[l];
    for (const v of row) {
      let s = 0, c = 0;
      for (let k = g.off[v]; k < g.off[v + 1]; k++) { s += pos[g.adj[k]]; c++; }
      bary[v] = c ? s / c : pos[v];
    }
    row.sort((p, q) => bary[p] - bary[q] || pos[p] - pos[q]);
    setPos(row);
  };
  for (let it = 0; it < ORDER_SWEEPS; it++) {
    if (it % 2 === 0) for (let l = 1; l < L; l++) sweep(l, up);
    else for (let l = L - 2; l >= 0; l--) sweep(l, down);
  }

  // ---- coordinates ----
  const x = new Float64Array(V);
  const y = new Float64Array(V);
  let yy = 0;
  for (let l = 0; l < L; l++) {
    const row = rows[l];
    let hmax = 0;
    for (const v of row) hmax = Math.max(hmax, vh[v]);
    let cx = 0;
    for (let i = 0; i < row.length; i++) {
      const v = row[i];
      if (i) cx += (vw[row[i - 1]] + vw[v]) / 2 + NODE_SEP;
      x[v] = cx;
      y[v] = yy + hmax / 2;
    }
    for (const v of row) x[v] -= cx / 2;
    yy += hmax + RANK_SEP;
  }
  const place = (l: number, g: Csr | null) => {
    const row = rows[l];
    const k = row.length;
    if (!k) return;
    const des = new Float64Array(k), wt = new Float64Array(k), gap = new Float64Array(k), res = new Float64Array(k);
    for (let i = 0; i < k; i++) {
      const v = row[i];
      let s = 0, c = 0;
      const gs = g ? [g] : [up, down];
      for (const gg of gs) for (let j = gg.off[v]; j < gg.off[v + 1]; j++) { s += x[gg.adj[j]]; c++; }
      des[i] = c ? s / c : x[v];
      // dummies weigh more so long edges come out straight
      wt[i] = (v >= n ? 4 : 1) * (c ? 1 : 0.05);
      if (i) gap[i] = (vw[row[i - 1]] + vw[v]) / 2 + NODE_SEP;
    }
    placeRow(des, wt, gap, res);
    for (let i = 0; i < k; i++) x[row[i]] = res[i];
  };
  for (let it = 0; it < COORD_SWEEPS; it++) {
    if (it >= COORD_SWEEPS - 2) for (let l = 0; l < L; l++) place(l, null);
    else if (it % 2 === 0) for (let l = 1; l < L; l++) place(l, up);
    else for (let l = L - 2; l >= 0; l--) place(l, down);
  }
  yy = wrapWideRows(rows, x, y, vw, vh, inp.maxRowW ?? MAX_ROW_W);

  packIsolated(isolated, x, y, vw, vh, rows, yy);

  // ---- edge polylines ----
  const ptOff = new Int32Array(m + 1);
  for (let k = 0; k < m; k++) {
    const span = dummyStart[k] < 0 ? 0 : layer0[B[k]] - layer0[A[k]] - 1;
    ptOff[k + 1] = ptOff[k] + 4 + 2 * span;
  }
  const pts = new Float32Array(ptOff[m]);
  for (let k = 0; k < m; k++) {
    const seq: number[] = [x[A[k]], y[A[k]] + vh[A[k]] / 2];
    if (dummyStart[k] >= 0) {
      const span = layer0[B[k]] - layer0[A[k]] - 1;
      for (let j = 0; j < span; j++) seq.push(x[dummyStart[k] + j], y[dummyStart[k] + j]);
    }
    seq.push(x[B[k]], y[B[k]] - vh[B[k]] / 2);
    if (rev[k]) for (let i = 0, j = seq.length - 2; i < j; i += 2, j -= 2) {
      [seq[i], seq[j]] = [seq[j], seq[i]];
      [seq[i + 1], seq[j + 1]] = [seq[j + 1], seq[i + 1]];
    }
    pts.set(seq, ptOff[k]);
  }
  return { x: x.slice(0, n), y: y.slice(0, n), ptOff, pts, algorithm: "layered", ms: performance.now() - t0 };
}

/**
 * Layers wider than maxRowW (a fan of 200 weights into one op) are folded onto several rows, cut by x position
 * so neighbours stay neighbours; otherwise the whole drawing, fitted to a screen, is a one-pixel line.
 * Sets every y and returns the bottom of the drawing.
 */
function wrapWideRows(rows: number[][], x: Float64Array, y: Float64Array, w: Float64Array, h: Float64Array, maxRowW: number): number {
  let yy = 0;
  for (const row of rows) {
    let hmax = 0;
    for (const v of row) hmax = Math.max(hmax, h[v]);
    if (!row.length) { yy += RANK_SEP; continue; }
    const left = x[row[0]] - w[row[0]] / 2;
    const right = x[row[row.length - 1]] + w[row[row.length - 1]] / 2;
    const extent = right - left;
    const parts = Math.ceil(extent / maxRowW);
    if (parts <= 1) {
      for (const v of row) y[v] = yy + hmax / 2;
      yy += hmax + RANK_SEP;
      continue;
    }
    // the row is already ordered by x: cut it into `parts` runs of about equal width, stacked and centred
    const per = extent / parts;
    const rowGap = RANK_SEP / 2;
    let start = 0;
    for (let p = 0; p < parts && start < row.length; p++) {
      let end = start;
      while (end < row.length && (p === parts - 1 || x[row[end]] - left < (p + 1) * per)) end++;
      if (end === start) continue;
      const a = x[row[start]] - w[row[start]] / 2, b = x[row[end - 1]] + w[row[end - 1]] / 2;
      const shift = (left + right) / 2 - (a + b) / 2;
      for (let i = start; i < end; i++) { x[row[i]] += shift; y[row[i]] = yy + hmax / 2; }
      yy += hmax + rowGap;
      start = end;
    }
    yy += RANK_SEP - rowGap;
  }
  return yy;
}

function packIsolated(iso: number[], x: Float64Array, y: Float64Array, w: Float64Array, h: Float64Array, rows: number[][], top: number): void {
  if (!iso.length) return;
  let minX = Infinity, maxX = -Infinity;
  for (const row of rows) for (const v of row) { minX = Math.min(minX, x[v] - w[v] / 2); maxX = Math.max(maxX, x[v] + w[v] / 2); }
  let avgW = 0;
  for (const v of iso) avgW += w[v] + NODE_SEP;
  avgW /= iso.length;
  const width = Math.max(Number.isFinite(maxX) ? maxX - minX : 0, Math.sqrt(iso.length) * avgW * 1.6);
  const left = Number.isFinite(minX) ? minX : -width / 2;
  let cx = left, cy = top, rowH = 0;
  for (const v of iso) {
    if (cx > left && cx + w[v] > left + width) { cx = left; cy += rowH + RANK_SEP / 2; rowH = 0; }
    x[v] = cx + w[v] / 2;
    y[v] = cy + h[v] / 2;
    cx += w[v] + NODE_SEP;
    rowH = Math.max(rowH, h[v]);
  }
}
