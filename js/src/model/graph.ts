/** The graph document indexed for the views: dense node indices, CSR adjacency, a topological order. */
import type { GraphDoc, GraphEdge, GraphNode } from "../schema/types";
import { columnsOf, type GraphColumns } from "./columnar";

/** id → node index (all the views ask of it). */
export interface IdIndex {
  get(id: number): number | undefined;
}

/** The ids are 0..n-1 in order (what Python writes): an id is its own index, and no map is built. */
class DenseIds implements IdIndex {
  constructor(private readonly n: number) {}
  get(id: number): number | undefined {
    return Number.isInteger(id) && id >= 0 && id < this.n ? id : undefined;
  }
}

/**
 * The document with dense indices: node i is doc.nodes[i]; edges whose ends are unknown ids are dropped.
 * Adjacency is stored as CSR arrays of DISTINCT neighbours (x*x has two edges but one input node).
 */
export class GraphModel {
  readonly doc: GraphDoc;
  readonly n: number;
  readonly nodes: GraphNode[];
  /** index → id is nodes[i].id; id → index: */
  readonly indexOf: IdIndex;
  /** kept edges (doc.edges entries), and their end indices */
  readonly edges: GraphEdge[];
  readonly eSrc: Int32Array;
  readonly eDst: Int32Array;
  readonly predOff: Int32Array;
  readonly pred: Int32Array;
  readonly succOff: Int32Array;
  readonly succ: Int32Array;
  /** position of each node in a topological order (sources first); cycles, if any, are broken by id order */
  readonly topo: Int32Array;

  constructor(doc: GraphDoc) {
    this.doc = doc;
    this.nodes = doc.nodes;
    this.n = doc.nodes.length;
    const cols = columnsOf(doc);
    if (cols) [this.indexOf, this.edges, this.eSrc, this.eDst] = this.fromColumns(cols);
    else {
      this.indexOf = indexIds(this.n, (i) => doc.nodes[i].id);
      const kept: GraphEdge[] = [];
      const src: number[] = [];
      const dst: number[] = [];
      for (const e of doc.edges) {
        const s = this.indexOf.get(e.source);
        const t = this.indexOf.get(e.target);
        if (s === undefined || t === undefined || s === t) continue;
        kept.push(e);
        src.push(s);
        dst.push(t);
      }
      this.edges = kept;
      this.eSrc = Int32Array.from(src);
      this.eDst = Int32Array.from(dst);
    }
    [this.succOff, this.succ] = distinctCsr(this.n, this.eSrc, this.eDst);
    [this.predOff, this.pred] = distinctCsr(this.n, this.eDst, this.eSrc);
    this.topo = topoPositions(this.n, this.predOff, this.pred, this.succOff);
  }

  /**
   * The same from a columnar document's typed arrays, without reading a row object. With dense ids and every edge
   * kept (what Python writes), the edge ends are the document's own arrays, not copies.
   */
  private fromColumns(c: GraphColumns): [IdIndex, GraphEdge[], Int32Array, Int32Array] {
    const n = this.n, ids = c.ids;
    const index = indexIds(n, (i) => ids[i]);
    const m = c.source.length;
    if (index instanceof DenseIds && c.source instanceof Int32Array && c.target instanceof Int32Array) {
      let ok = true;
      for (let k = 0; k < m && ok; k++) {
        const a = c.source[k], b = c.target[k];
        ok = a >= 0 && b >= 0 && a < n && b < n && a !== b;
      }
      if (ok) return [index, this.doc.edges, c.source, c.target];
    }
    const src = new Int32Array(m), dst = new Int32Array(m);
    const keep = new Uint8Array(m);
    let w = 0;
    for (let k = 0; k < m; k++) {
      const s = index.get(c.source[k]), t = index.get(c.target[k]);
      if (s === undefined || t === undefined || s === t) continue;
      keep[k] = 1;
      src[w] = s;
      dst[w++] = t;
    }
    const all = this.doc.edges;
    const edges = w === m ? all : all.filter((_, k) => keep[k] === 1);
    return [index, edges, w === m ? src : src.slice(0, w), w === m ? dst : dst.slice(0, w)];
  }

  succsOf(i: number): Int32Array {
    return this.succ.subarray(this.succOff[i], this.succOff[i + 1]);
  }
  predsOf(i: number): Int32Array {
    return this.pred.subarray(this.predOff[i], this.predOff[i + 1]);
  }
  outDegree(i: number): number {
    return this.succOff[i + 1] - this.succOff[i];
  }
  inDegree(i: number): number {
    return this.predOff[i + 1] - this.predOff[i];
  }
}

/** id → index for ids read by `idAt`: arithmetic when they are 0..n-1 in order, else a Map (a repeated id: the last). */
function indexIds(n: number, idAt: (i: number) => number): IdIndex {
  let dense = true;
  for (let i = 0; i < n && dense; i++) dense = idAt(i) === i;
  if (dense) return new DenseIds(n);
  const map = new Map<number, number>();
  for (let i = 0; i < n; i++) map.set(idAt(i), i);
  return map;
}

/** CSR adjacency from→to with duplicate pairs removed. */
export function distinctCsr(n: number, from: Int32Array, to: Int32Array): [Int32Array, Int32Array] {
  const off = new Int32Array(n + 1);
  for (let k = 0; k < from.length; k++) off[from[k] + 1]++;
  for (let i = 0; i < n; i++) off[i + 1] += off[i];
  const fill = off.slice(0, n);
  const adj = new Int32Array(from.length);
  for (let k = 0; k < from.length; k++) adj[fill[from[k]]++] = to[k];
  // dedupe each row in place (rows are tiny except for fan-in/fan-out hubs; a Set keeps it linear)
  const outOff = new Int32Array(n + 1);
  let w = 0;
  for (let i = 0; i < n; i++) {
    const a = off[i];
    const b = off[i + 1];
    outOff[i] = w;
    if (b - a <= 8) {
      for (let k = a; k < b; k++) {
        let dup = false;
        for (let j = outOff[i]; j < w; j++) if (adj[j] === adj[k]) dup = true;
        if (!dup) adj[w++] = adj[k];
      }
    } else {
      const seen = new Set<number>();
      for (let k = a; k < b; k++) if (!seen.has(adj[k])) { seen.add(adj[k]); adj[w++] = adj[k]; }
    }
  }
  outOff[n] = w;
  return [outOff, adj.slice(0, w)];
}

/**
 * A topological order with locality: depth-first post-order over inputs, starting from the sinks (roots) in id
 * order. Every input comes before its consumer, and a leaf (a weight) comes right before the op that uses it,
 * instead of all leaves first as in Kahn's order; range blocks cut from this order stay coherent.
 * Nodes on a cycle (malformed input) still get a position.
 */
function topoPositions(n: number, predOff: Int32Array, pred: Int32Array, succOff: Int32Array): Int32Array {
  const pos = new Int32Array(n).fill(-1);
  const state = new Uint8Array(n);
  const stack = new Int32Array(n);
  const it = new Int32Array(n);
  let p = 0;
  const run = (s: number) => {
    let top = 0;
    stack[0] = s;
    state[s] = 1;
    it[s] = predOff[s];
    while (top >= 0) {
      const v = stack[top];
      if (it[v] < predOff[v + 1]) {
        const u = pred[it[v]++];
        if (!state[u]) { state[u] = 1; it[u] = predOff[u]; stack[++top] = u; }
      } else { pos[v] = p++; top--; }
    }
  };
  for (let i = 0; i < n; i++) if (!state[i] && succOff[i + 1] === succOff[i]) run(i);
  for (let i = 0; i < n; i++) if (!state[i]) run(i);
  return pos;
}
