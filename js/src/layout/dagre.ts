/** dagre (network-simplex ranking, crossing minimisation, Brandes–Köpf placement) for small views. */
import dagre from "@dagrejs/dagre";
import { NODE_SEP, RANK_SEP, type LayoutInput, type LayoutResult } from "./types";

export function dagreLayout(inp: LayoutInput): LayoutResult {
  const t0 = performance.now();
  const n = inp.w.length;
  const m = inp.src.length;
  const g = new dagre.graphlib.Graph({ multigraph: false, directed: true });
  g.setGraph({ rankdir: "TB", nodesep: NODE_SEP, ranksep: RANK_SEP, edgesep: 12, marginx: 0, marginy: 0 });
  g.setDefaultEdgeLabel(() => ({}));
  for (let i = 0; i < n; i++) g.setNode(String(i), { width: inp.w[i], height: inp.h[i] });
  for (let k = 0; k < m; k++) g.setEdge(String(inp.src[k]), String(inp.dst[k]));
  dagre.layout(g);
  const x = new Float64Array(n);
  const y = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const nd = g.node(String(i)) as { x: number; y: number };
    x[i] = nd.x;
    y[i] = nd.y;
  }
  const ptOff = new Int32Array(m + 1);
  const lists: { x: number; y: number }[][] = [];
  for (let k = 0; k < m; k++) {
    const e = g.edge(String(inp.src[k]), String(inp.dst[k])) as { points?: { x: number; y: number }[] } | undefined;
    const p = e?.points ?? [];
    lists.push(p);
    ptOff[k + 1] = ptOff[k] + 2 * p.length;
  }
  const pts = new Float32Array(ptOff[m]);
  lists.forEach((p, k) => p.forEach((q, j) => { pts[ptOff[k] + 2 * j] = q.x; pts[ptOff[k] + 2 * j + 1] = q.y; }));
  return { x, y, ptOff, pts, algorithm: "dagre", ms: performance.now() - t0 };
}
