/**
 * Decoding the graph document: bytes (gzip or plain UTF-8 JSON) → a validated, normalised GraphDoc.
 *
 * The bytes are the same in the widget (the `_graph` trait) and in the export (a base64 <script> block):
 * UTF-8 JSON, optionally gzip-compressed. Gzip is undone with the browser's native DecompressionStream, so
 * no inflate library is bundled.
 */
import type { GraphDoc, GraphEdge, GraphNode } from "../schema/types";
import { normaliseFindings } from "./findings";
import { arr, num, str } from "./read";

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

/** Bytes (gzip or plain UTF-8 JSON) → the parsed value (any of the documents). */
export async function parseBytes(value: unknown): Promise<unknown> {
  let bytes = toBytes(value);
  if (isGzip(bytes)) bytes = await gunzip(bytes);
  return JSON.parse(new TextDecoder("utf-8").decode(bytes));
}

/** Bytes (gzip or plain UTF-8 JSON) → validated, normalised document. */
export async function decodeGraph(value: unknown): Promise<GraphDoc> {
  return normaliseGraph(await parseBytes(value));
}

/**
 * Checks a document's `format` (absent is accepted unless `required`: older files) and that its version is one this
 * viewer reads (1); `what` names the document in the error ("graph", "diff", "N-way document").
 */
export function checkFormat(o: Record<string, unknown>, format: string, what: string, required = false): void {
  if ((required || o.format !== undefined) && o.format !== format) throw new Error(`not a graphwidget ${what} (format=${String(o.format)})`);
  if (typeof o.version === "number" && o.version > 1) {
    throw new Error(`${what} format version ${o.version} is newer than this viewer (1); update graphwidget`);
  }
}

/**
 * Checks the envelope and fills absent optional fields with null, so the views never test for undefined.
 * Unknown extra fields are kept (forward compatible within a version). Node and edge records are filled in place.
 */
export function normaliseGraph(raw: unknown): GraphDoc {
  if (!raw || typeof raw !== "object") throw new Error("graph JSON must be an object");
  const o = raw as Record<string, unknown>;
  checkFormat(o, "graphwidget", "graph");
  const m = (o.meta && typeof o.meta === "object" ? o.meta : {}) as Record<string, unknown>;
  const nodes = arr<Record<string, unknown>>(o.nodes).map(normaliseNode);
  const edges = arr<Record<string, unknown>>(o.edges).map((e): GraphEdge => {
    // in place, as for nodes
    e.source = Number(e.source);
    e.target = Number(e.target);
    e.output = num(e.output);
    e.slot = num(e.slot);
    e.shape = Array.isArray(e.shape) ? e.shape : null;
    e.dtype = str(e.dtype);
    e.also = Array.isArray(e.also) ? e.also : null;
    return e as unknown as GraphEdge;
  });
  return {
    format: "graphwidget",
    version: typeof o.version === "number" ? o.version : 1,
    meta: {
      ...m,
      torch: str(m.torch),
      title: str(m.title),
      roots: arr<number>(m.roots),
      traced: m.traced === true,
      timed: m.timed === true,
      timing: m.timing && typeof m.timing === "object" ? (m.timing as Record<string, unknown>) : null,
      modules: moduleClasses(m.modules),
      modules_inferred: m.modules_inferred === true,
    },
    nodes,
    edges,
    // the advisor's findings (null: never advised); kept, not dropped with the other unknown top-level keys
    findings: normaliseFindings(o.findings),
  };
}

/** meta.modules as {path: class name}, string entries only (an older file has none: null). */
function moduleClasses(v: unknown): Record<string, string> | null {
  if (!v || typeof v !== "object" || Array.isArray(v)) return null;
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [k, c] of Object.entries(v as Record<string, unknown>)) if (typeof c === "string" && c) out[k] = c;
  return out;
}

/** Fills a node record in place (the record is freshly parsed: copying 100k records would only cost time). */
function normaliseNode(n: Record<string, unknown>): GraphNode {
  n.id = Number(n.id);
  n.op = typeof n.op === "string" ? n.op : String(n.op ?? "?");
  n.kind = typeof n.kind === "string" ? n.kind : "backward";
  n.outputs = Array.isArray(n.outputs) ? n.outputs : null;
  n.saved = arr(n.saved);
  n.attrs = n.attrs && typeof n.attrs === "object" ? n.attrs : {};
  n.saved_bytes = num(n.saved_bytes) ?? 0;
  n.tensor = n.tensor && typeof n.tensor === "object" ? n.tensor : null;
  n.source = str(n.source);
  n.code = str(n.code);
  n.module = str(n.module);
  n.out_stride = Array.isArray(n.out_stride) ? n.out_stride : null;
  n.out_contiguous = Array.isArray(n.out_contiguous) ? n.out_contiguous : null;
  n.seq = num(n.seq);
  n.fwd_ms = num(n.fwd_ms);
  n.bwd_ms = num(n.bwd_ms);
  n.grad_bytes = num(n.grad_bytes);
  n.peak_bytes = num(n.peak_bytes);
  n.rank_spread_ms = num(n.rank_spread_ms);
  return n as unknown as GraphNode;
}
