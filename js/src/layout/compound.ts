/**
 * Compound layout: expanded groups are drawn as frames around their contents (as Model Explorer does), so each
 * frame's contents are laid out on their own, innermost first, and the frame then is one node (of its measured
 * size) in its parent's layout.
 *
 * An edge is routed in the layout of the lowest frame holding both ends, between the two children of that frame
 * that hold them. Inside every frame it crosses, it runs to or from a port: a point pinned to the top of the
 * frame's contents where edges enter it, or to the bottom where they leave. The ports take part in that frame's
 * own layout, so the edge inside is routed like any other (with bend points beside the nodes, not through them): a
 * residual connection that enters a transformer block at the top and joins the sum at its bottom runs down the
 * side of the block instead of behind its attention and MLP.
 *
 * Cost: every node and edge is laid out once, in one container, plus one port per frame an edge crosses. Frames
 * with ports use the layered layout (it can pin them); dagre lays out small frames without ports while a budget
 * lasts (it gives the best small drawings but costs about 0.3 ms of CPU per node or edge here, the layered layout
 * about 0.02 ms).
 */
import { dagreLayout } from "./dagre";
import { layeredLayout } from "./layered";
import { DAGRE_MAX_EDGES, DAGRE_MAX_NODES, FRAME_PAD, FRAME_TITLE_H, type LayoutInput, type LayoutResult } from "./types";
import { fitPane } from "./wrap";

/** nodes + edges that dagre may lay out in one compound layout */
export const DAGRE_BUDGET = 400;

const IN = 1, OUT = 2;
/** padding inside a frame that holds other frames (FRAME_PAD inside the others) */
const OUTER_PAD = 2 * FRAME_PAD;

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
  const R = n + F;

  // ---- each edge: the container holding both ends (there it joins two siblings), and the ports it passes ----
  const subOf = new Map<number, number>();
  const subA: number[] = [], subB: number[] = [], subC: number[] = [];
  const edgesOf: number[][] = Array.from({ length: F + 1 }, () => []);
  const edgeSub = new Int32Array(m);
  // ports: one per (container, child, direction); portRep = the child it connects, portDir IN or OUT
  const portOf = new Map<number, number>();
  const portC: number[] = [], portRep: number[] = [], portDir: number[] = [];
  const portsOf: number[][] = Array.from({ length: F + 1 }, () => []);
  const port = (c: number, rep: number, dir: number): number => {
    const key = (rep * (F + 1) + c) * 3 + dir;
    let p = portOf.get(key);
    if (p === undefined) {
      p = portC.length;
      portOf.set(key, p);
      portC.push(c); portRep.push(rep); portDir.push(dir);
      portsOf[c].push(p);
    }
    return p;
  };
  const outHops: number[][] = new Array(m), inHops: number[][] = new Array(m);
  for (let k = 0; k < m; k++) {
    let a = inp.src[k], b = inp.dst[k];
    let ca = parentOf(a), cb = parentOf(b);
    const outs: number[] = [], ins: number[] = [];
    while (ca !== cb) {
      if (depth[ca] >= depth[cb]) { outs.push(port(ca, a, OUT)); a = n + ca; ca = parentOf(a); }
      else { ins.push(port(cb, b, IN)); b = n + cb; cb = parentOf(b); }
    }
    outHops[k] = outs;
    inHops[k] = ins;
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
  const proute: Float32Array[] = new Array(portC.length); // rep → out-port, or in-port → rep
  const order = Array.from({ length: F }, (_, f) => f).sort((p, q) => depth[q] - depth[p]);
  order.push(ROOT);
  let dagreLeft = inp.algorithm === "layered" ? 0 : inp.algorithm === "dagre" ? Infinity : DAGRE_BUDGET;
  const used = new Set<string>();
  for (const c of order) {
    const list = kids[c];
    const es = edgesOf[c];
    const ps = portsOf[c];
    if (!list.length) { if (c !== ROOT) { W[n + c] = inp.fminw?.[c] ?? 60; H[n + c] = FRAME_TITLE_H + 2 * FRAME_PAD; } continue; }
    const K = list.length, P = ps.length;
    const w = new Float64Array(K + P).fill(1), h = new Float64Array(K + P).fill(1);
    for (let j = 0; j < K; j++) { w[j] = W[list[j]]; h[j] = H[list[j]]; }
    const src = new Int32Array(es.length + P), dst = new Int32Array(es.length + P);
    es.forEach((e, q) => { src[q] = local[subA[e]]; dst[q] = local[subB[e]]; });
    const pin = P ? new Uint8Array(K + P) : undefined;
    ps.forEach((p, q) => {
      const r = local[portRep[p]];
      if (portDir[p] === IN) { src[es.length + q] = K + q; dst[es.length + q] = r; } else { src[es.length + q] = r; dst[es.length + q] = K + q; }
      pin![K + q] = portDir[p];
    });
    const sub: LayoutInput = { w, h, src, dst, pin };
    const cost = K + es.length;
    const useDagre = !P && K <= DAGRE_MAX_NODES && es.length <= DAGRE_MAX_EDGES && cost <= dagreLeft;
    if (useDagre) dagreLeft -= cost;
    // shaped to the pane: too wide, its layers folded; too tall, in columns (a frame's contents as the top level)
    sub.pane = inp.pane;
    const res = fitPane(sub, useDagre ? dagreLayout(sub) : layeredLayout(sub));
    used.add(res.algorithm);
    const wrapped = res.wrapped ?? null;
    // the frame is sized by its children; its ports sit on the top and bottom of that area
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (let j = 0; j < K; j++) {
      const r = list[j];
      x0 = Math.min(x0, res.x[j] - W[r] / 2); x1 = Math.max(x1, res.x[j] + W[r] / 2);
      y0 = Math.min(y0, res.y[j] - H[r] / 2); y1 = Math.max(y1, res.y[j] + H[r] / 2);
    }
    if (wrapped) { x0 = Math.min(x0, wrapped.x0); x1 = Math.max(x1, wrapped.x1); y0 = Math.min(y0, wrapped.y0); y1 = Math.max(y1, wrapped.y1); }
    // routes of ports leave the children's area sideways only within it
    for (let q = 0; q < P; q++) { x0 = Math.min(x0, res.x[K + q]); x1 = Math.max(x1, res.x[K + q]); }
    // a frame holding frames keeps more room around them, so nested borders read as nesting, not as a pile of
    // parallel lines
    const pad = c === ROOT ? 0 : list.some((r) => r >= n) ? OUTER_PAD : FRAME_PAD;
    const top = c === ROOT ? 0 : FRAME_TITLE_H + pad;
    let cw = x1 - x0 + 2 * pad;
    let extra = 0;
    const minW = c === ROOT ? 0 : inp.fminw?.[c] ?? 0;
    if (cw < minW) { extra = (minW - cw) / 2; cw = minW; } // a long title: the contents sit in the middle
    const dx = pad + extra - x0, dy = top - y0;
    for (let j = 0; j < K; j++) { lx[list[j]] = res.x[j] + dx; ly[list[j]] = res.y[j] + dy; }
    const slice = (q: number) => {
      const p = res.pts.slice(res.ptOff[q], res.ptOff[q + 1]);
      for (let i = 0; i < p.length; i += 2) { p[i] += dx; p[i + 1] += dy; }
      return p;
    };
    es.forEach((e, q) => { route[e] = slice(q); });
    ps.forEach((p, q) => {
      const r = slice(es.length + q);
      // the port itself: on the edge of the children's area (top for IN, bottom for OUT), not a row of its own
      const at = portDir[p] === IN ? 0 : r.length - 2;
      r[at + 1] = portDir[p] === IN ? top - FRAME_PAD / 2 : y1 - y0 + top + FRAME_PAD / 2;
      proute[p] = r;
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

  // ---- edges: out of the frames around the source (port to port), across, into the frames around the target ----
  const lists: number[][] = [];
  let total = 0;
  const append = (P: number[], r: Float32Array, c: number, joinX: number | null) => {
    for (let i = 0; i < r.length; i += 2) {
      let px = r[i] + ox[c];
      const py = r[i + 1] + oy[c];
      if (i === 0 && joinX !== null) px = joinX; // continue straight down from where the last piece ended
      const L = P.length;
      if (L && Math.abs(P[L - 2] - px) < 0.01 && Math.abs(P[L - 1] - py) < 0.01) continue;
      P.push(px, py);
    }
  };
  for (let k = 0; k < m; k++) {
    const s = inp.src[k], t = inp.dst[k];
    const e = edgeSub[k];
    let P: number[] = [];
    if (e < 0) P = [x[s], y[s] + inp.h[s] / 2, x[t], y[t] - inp.h[t] / 2];
    else {
      let joinX: number | null = null;
      for (const p of outHops[k]) {
        append(P, proute[p], portC[p], joinX);
        joinX = P[P.length - 2];
      }
      const across = route[e];
      const ins = inHops[k];
      // the crossing ends where the outermost in-port is
      const firstIn = ins.length ? ins[ins.length - 1] : -1;
      const r = across.slice();
      if (firstIn >= 0) r[r.length - 2] = proute[firstIn][0] + ox[portC[firstIn]] - ox[subC[e]];
      append(P, r, subC[e], joinX);
      for (let q = ins.length - 1; q >= 0; q--) append(P, proute[ins[q]], portC[ins[q]], null);
      if (P.length < 4) P = [x[s], y[s] + inp.h[s] / 2, x[t], y[t] - inp.h[t] / 2];
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
