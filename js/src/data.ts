/**
 * Decoding the graph document and indexing it for the views.
 *
 * The bytes are the same in the widget (the `_graph` trait) and in the export (a base64 <script> block):
 * UTF-8 JSON, optionally gzip-compressed. Gzip is undone with the browser's native DecompressionStream, so
 * no inflate library is bundled.
 */
import type { GraphDoc, GraphEdge, GraphNode } from "./types";

const GZIP_MAGIC0 = 0x1f;
const GZIP_MAGIC1 = 0x8b;

/** Accepts whatever a widget model hands out for a Bytes trait (DataView in Jupyter) or a test passes. */
export function toBytes(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (typeof value === "string") return new TextEncoder().encode(value);
  throw new TypeError(`graph data must be bytes, got ${value === null ? "null" : typeof value}`);
}

export function isGzip(bytes: Uint8Array): boolean {
  return bytes.length > 2 && bytes[0] === GZIP_MAGIC0 && bytes[1] === GZIP_MAGIC1;
}

export async function gunzip(bytes: Uint8Array): Promise<Uint8Array> {
  if (typeof DecompressionStream === "undefined") {
    throw new Error("this browser has no DecompressionStream; open the graph in a current Chrome, Edge, Firefox or Safari");
  }
  const stream = new Blob([bytes as BlobPart]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

export function base64ToBytes(b64: string): Uint8Array {
  const bin = atob(b64.replace(/\s+/g, ""));
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** Bytes (gzip or plain UTF-8 JSON) → validated, normalised document. */
export async function decodeGraph(value: unknown): Promise<GraphDoc> {
  let bytes = toBytes(value);
  if (isGzip(bytes)) bytes = await gunzip(bytes);
  const text = new TextDecoder("utf-8").decode(bytes);
  return normaliseGraph(JSON.parse(text));
}

function arr<T>(v: unknown): T[] {
  return Array.isArray(v) ? (v as T[]) : [];
}
function numOrNull(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}
function strOrNull(v: unknown): string | null {
  return typeof v === "string" ? v : null;
}

/**
 * Checks the envelope and fills absent optional fields with null, so the views never test for undefined.
 * Unknown extra fields are kept (forward compatible within a version).
 */
export function normaliseGraph(raw: unknown): GraphDoc {
  if (!raw || typeof raw !== "object") throw new Error("graph JSON must be an object");
  const o = raw as Record<string, unknown>;
  if (o.format !== undefined && o.format !== "graphwidget") throw new Error(`not a graphwidget graph (format=${String(o.format)})`);
  if (typeof o.version === "number" && o.version > 1) {
    throw new Error(`graph format version ${o.version} is newer than this viewer (1); update graphwidget`);
  }
  const m = (o.meta && typeof o.meta === "object" ? o.meta : {}) as Record<string, unknown>;
  const nodes = arr<Record<string, unknown>>(o.nodes).map(normaliseNode);
  const edges = arr<Record<string, unknown>>(o.edges).map(
    (e): GraphEdge => ({
      ...e,
      source: Number(e.source),
      target: Number(e.target),
      output: numOrNull(e.output),
      slot: numOrNull(e.slot),
      shape: Array.isArray(e.shape) ? (e.shape as number[]) : null,
      dtype: strOrNull(e.dtype),
    }),
  );
  return {
    format: "graphwidget",
    version: typeof o.version === "number" ? o.version : 1,
    meta: {
      ...m,
      torch: strOrNull(m.torch),
      title: strOrNull(m.title),
      roots: arr<number>(m.roots),
      traced: m.traced === true,
      timed: m.timed === true,
      timing: m.timing && typeof m.timing === "object" ? (m.timing as Record<string, unknown>) : null,
    },
    nodes,
    edges,
  };
}

function normaliseNode(n: Record<string, unknown>): GraphNode {
  return {
    ...n,
    id: Number(n.id),
    op: typeof n.op === "string" ? n.op : String(n.op ?? "?"),
    kind: typeof n.kind === "string" ? n.kind : "backward",
    outputs: Array.isArray(n.outputs) ? (n.outputs as GraphNode["outputs"]) : null,
    saved: arr<GraphNode["saved"][number]>(n.saved),
    attrs: n.attrs && typeof n.attrs === "object" ? (n.attrs as Record<string, unknown>) : {},
    saved_bytes: numOrNull(n.saved_bytes) ?? 0,
    tensor: n.tensor && typeof n.tensor === "object" ? (n.tensor as GraphNode["tensor"]) : null,
    source: strOrNull(n.source),
    code: strOrNull(n.code),
    module: strOrNull(n.module),
    out_stride: Array.isArray(n.out_stride) ? (n.out_stride as GraphNode["out_stride"]) : null,
    out_contiguous: Array.isArray(n.out_contiguous) ? (n.out_contiguous as GraphNode["out_contiguous"]) : null,
    seq: numOrNull(n.seq),
    fwd_ms: numOrNull(n.fwd_ms),
    bwd_ms: numOrNull(n.bwd_ms),
    grad_bytes: numOrNull(n.grad_bytes),
  };
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
  readonly indexOf: Map<number, number>;
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
    this.indexOf = new Map();
    doc.nodes.forEach((nd, i) => this.indexOf.set(nd.id, i));
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
    [this.succOff, this.succ] = distinctCsr(this.n, this.eSrc, this.eDst);
    [this.predOff, this.pred] = distinctCsr(this.n, this.eDst, this.eSrc);
    this.topo = topoPositions(this.n, this.predOff, this.pred, this.succOff);
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
