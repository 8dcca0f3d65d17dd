/**
 * Compound layout: expanded groups are drawn as frames around their contents (as Model Explorer does), so each
 * frame's contents are laid out on their own, innermost first, and the frame then is one node (of its measured
 * size) in its parent's layout. An edge is routed in the layout of the lowest frame holding both ends, between
 * the two children of that frame that hold them; inside a frame it drops straight from its node to the frame's
 * border (or from the border to its node), so edges between layers stay between layers.
 *
 * Cost: every node and edge is laid out once, in one container; dagre is used for small containers while a total
 * budget lasts (it gives the best small drawings but grows fast), the linear layered layout otherwise.
 */
import { dagreLayout } from "./dagre";
import { layeredLayout } from "./layered";
import { DAGRE_MAX_EDGES, DAGRE_MAX_NODES, FRAME_PAD, FRAME_TITLE_H, type LayoutInput, type LayoutResult } from "./types";

/** nodes + edges that dagre may lay out in one compound layout: it costs about 0.3 ms of CPU per node or edge here, the layered layout about 0.02 */
export const DAGRE_BUDGET = 400;

export function compoundLayout(inp: LayoutInput): LayoutResult {
  const t0 = performance.now();
  const n = inp.w.length;
  const m = inp.src.length;
  const fparent = inp.fparent!;
  const owner = inp.owner ?? new Int32Array(n).fill(-1);
  const F = fparent.length;
  const ROOT = F;
  // a "ref" is an item (0..n-1) or a frame (n + f); a container is a frame (0..F-1) or the top level (ROOT)
  const depth = new Int32Array(F + 1);
  for (let f = 0; f < F; f++) depth[f] = fparent[f] < 0 ? 1 : depth[fparent[f]] + 1;
  const parentOf = (r: number): number => {
    const p = r < n ? owner[r] : fparent[r - n];
    return p < 0 ? ROOT : p;
  };
  const kids: number[][] = Array.from({ length: F + 1 }, () => []);
  for (let i = 0; i < n; i++) kids[parentOf(i)].push(i);
  for (let f = 0; f < F; f++) kids[parentOf(n + f)].push(n + f);
  const local = new Int32Array(n + F);
  for (const list of kids) list.forEach((r, j) => { local[r] = j; });

  // ---- each edge belongs to the container holding both ends: there it joins two siblings (deduplicated) ----
  const subOf = new Map<number, number>();
  const subA: number[] = [], subB: number[] = [], subC: number[] = [];
  const edgesOf: number[][] = Array.from({ length: F + 1 }, () => []);
  const edgeSub = new Int32Array(m);
  const R = n + F;
  for (let k = 0; k < m; k++) {
    let a = inp.src[k], b = inp.dst[k];
    let ca = parentOf(a), cb = parentOf(b);
    while (ca !== cb) {
      if (depth[ca] >= depth[cb]) { a = n + ca; ca = parentOf(a); } else { b = n + cb; cb = parentOf(b); }
    }
    if (a === b) { edgeSub[k] = -1; continue; } // an edge from a frame's member to the frame itself: malformed
    const key = a * R + b;
    let e = subOf.get(key);
    if (e === undefined) {
      e = subA.length;
      subOf.set(key, e);
      subA.push(a); subB.push(b); subC.push(ca);
      edgesOf[ca].push(e);
    }
    edgeSub[k] = e;
  }

  // ---- innermost first: lay out each container, then it is a node of that size in its parent ----
  const W = new Float64Array(R), H = new Float64Array(R);
  W.set(inp.w); H.set(inp.h);
  const lx = new Float64Array(R), ly = new Float64Array(R); // centres relative to the container's top-left
  const route: Float32Array[] = new Array(subA.length);
  const order = Array.from({ length: F }, (_, f) => f).sort((p, q) => depth[q] - depth[p]);
  order.push(ROOT);
  let dagreLeft = inp.algorithm === "layered" ? 0 : inp.algorithm === "dagre" ? Infinity : DAGRE_BUDGET;
  const used = new Set<string>();
  for (const c of order) {
    const list = kids[c];
    const es = edgesOf[c];
    if (!list.length) { if (c !== ROOT) { W[n + c] = inp.fminw?.[c] ?? 60; H[n + c] = FRAME_TITLE_H + 2 * FRAME_PAD; } continue; }
    const sub: LayoutInput = {
      w: Float64Array.from(list, (r) => W[r]), h: Float64Array.from(list, (r) => H[r]),
      src: Int32Array.from(es, (e) => local[subA[e]]), dst: Int32Array.from(es, (e) => local[subB[e]]),
    };
    const cost = list.length + es.length;
    const useDagre = list.length <= DAGRE_MAX_NODES && es.length <= DAGRE_MAX_EDGES && cost <= dagreLeft;
    const res = useDagre ? dagreLayout(sub) : layeredLayout(sub);
    if (useDagre) dagreLeft -= cost;
    used.add(res.algorithm);
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (let j = 0; j < list.length; j++) {
      const r = list[j];
      x0 = Math.min(x0, res.x[j] - W[r] / 2); x1 = Math.max(x1, res.x[j] + W[r] / 2);
      y0 = Math.min(y0, res.y[j] - H[r] / 2); y1 = Math.max(y1, res.y[j] + H[r] / 2);
    }
    const pad = c === ROOT ? 0 : FRAME_PAD;
    const top = c === ROOT ? 0 : FRAME_TITLE_H + FRAME_PAD;
    let cw = x1 - x0 + 2 * pad;
    let extra = 0;
    const minW = c === ROOT ? 0 : inp.fminw?.[c] ?? 0;
    if (cw < minW) { extra = (minW - cw) / 2; cw = minW; } // a long title: the contents sit in the middle
    const dx = pad + extra - x0, dy = top - y0;
    for (let j = 0; j < list.length; j++) { lx[list[j]] = res.x[j] + dx; ly[list[j]] = res.y[j] + dy; }
    es.forEach((e, q) => {
      const p = res.pts.slice(res.ptOff[q], res.ptOff[q + 1]);
      for (let i = 0; i < p.length; i += 2) { p[i] += dx; p[i + 1] += dy; }
      route[e] = p;
    });
    if (c !== ROOT) { W[n + c] = cw; H[n + c] = y1 - y0 + top + pad; }
  }

  // ---- absolute positions, outermost first (parents come before their children) ----
  const ox = new Float64Array(F + 1), oy = new Float64Array(F + 1);
  const fx = new Float64Array(F), fy = new Float64Array(F), fw = new Float64Array(F), fh = new Float64Array(F);
  for (let f = 0; f < F; f++) {
    const p = parentOf(n + f);
    fx[f] = ox[p] + lx[n + f]; fy[f] = oy[p] + ly[n + f];
    fw[f] = W[n + f]; fh[f] = H[n + f];
    ox[f] = fx[f] - fw[f] / 2; oy[f] = fy[f] - fh[f] / 2;
  }
  const x = new Float64Array(n), y = new Float64Array(n);
  for (let i = 0; i < n; i++) { const p = parentOf(i); x[i] = ox[p] + lx[i]; y[i] = oy[p] + ly[i]; }

  // ---- edges: the route between the two siblings, extended to the nodes inside them ----
  const lists: number[][] = [];
  let total = 0;
  for (let k = 0; k < m; k++) {
    const s = inp.src[k], t = inp.dst[k];
    const e = edgeSub[k];
    let P: number[];
    if (e < 0) P = [x[s], y[s] + inp.h[s] / 2, x[t], y[t] - inp.h[t] / 2];
    else {
      const c = subC[e];
      const r = route[e];
      P = new Array(r.length);
      for (let i = 0; i < r.length; i += 2) { P[i] = r[i] + ox[c]; P[i + 1] = r[i + 1] + oy[c]; }
      const a = subA[e], b = subB[e];
      if (a !== s && a >= n) {
        // leave the frame straight below the node (inside the frame's padding), then follow the route
        const f = a - n;
        P[0] = clamp(x[s], fx[f] - fw[f] / 2 + FRAME_PAD, fx[f] + fw[f] / 2 - FRAME_PAD);
        P.unshift(x[s], y[s] + inp.h[s] / 2);
      }
      if (b !== t && b >= n) {
        const f = b - n;
        P[P.length - 2] = clamp(x[t], fx[f] - fw[f] / 2 + FRAME_PAD, fx[f] + fw[f] / 2 - FRAME_PAD);
        P.push(x[t], y[t] - inp.h[t] / 2);
      }
    }
    lists.push(P);
    total += P.length;
  }
  const ptOff = new Int32Array(m + 1);
  const pts = new Float32Array(total);
  for (let k = 0; k < m; k++) { pts.set(lists[k], ptOff[k]); ptOff[k + 1] = ptOff[k] + lists[k].length; }
  const algorithm = used.size === 1 ? [...used][0] as "dagre" | "layered" : used.size ? "dagre+layered" : "layered";
  return { x, y, ptOff, pts, algorithm, ms: performance.now() - t0, fx, fy, fw, fh };
}

function clamp(v: number, lo: number, hi: number): number {
  return lo > hi ? (lo + hi) / 2 : Math.min(hi, Math.max(lo, v));
}
