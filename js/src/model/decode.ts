/**
 * Decoding the graph document: bytes (gzip or plain UTF-8 JSON) → a validated, normalised GraphDoc.
 *
 * The bytes are the same in the widget (the `_graph` trait) and in the export (a base64 <script> block):
 * UTF-8 JSON, optionally gzip-compressed. Gzip is undone with the browser's native DecompressionStream, so
 * no inflate library is bundled.
 */
import type { GraphDoc, GraphEdge, GraphNode } from "../schema/types";
import { normaliseFindings } from "./findings";

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
 * Unknown extra fields are kept (forward compatible within a version). Node and edge records are filled in place.
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
  const edges = arr<Record<string, unknown>>(o.edges).map((e): GraphEdge => {
    // in place, as for nodes
    e.source = Number(e.source);
    e.target = Number(e.target);
    e.output = numOrNull(e.output);
    e.slot = numOrNull(e.slot);
    e.shape = Array.isArray(e.shape) ? e.shape : null;
    e.dtype = strOrNull(e.dtype);
    e.also = Array.isArray(e.also) ? e.also : null;
    return e as unknown as GraphEdge;
  });
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
    // the advisor's findings (null: never advised); kept, not dropped with the other unknown top-level keys
    findings: normaliseFindings(o.findings),
  };
}

/** Fills a node record in place (the record is freshly parsed: copying 100k records would only cost time). */
function normaliseNode(n: Record<string, unknown>): GraphNode {
  n.id = Number(n.id);
  n.op = typeof n.op === "string" ? n.op : String(n.op ?? "?");
  n.kind = typeof n.kind === "string" ? n.kind : "backward";
  n.outputs = Array.isArray(n.outputs) ? n.outputs : null;
  n.saved = arr(n.saved);
  n.attrs = n.attrs && typeof n.attrs === "object" ? n.attrs : {};
  n.saved_bytes = numOrNull(n.saved_bytes) ?? 0;
  n.tensor = n.tensor && typeof n.tensor === "object" ? n.tensor : null;
  n.source = strOrNull(n.source);
  n.code = strOrNull(n.code);
  n.module = strOrNull(n.module);
  n.out_stride = Array.isArray(n.out_stride) ? n.out_stride : null;
  n.out_contiguous = Array.isArray(n.out_contiguous) ? n.out_contiguous : null;
  n.seq = numOrNull(n.seq);
  n.fwd_ms = numOrNull(n.fwd_ms);
  n.bwd_ms = numOrNull(n.bwd_ms);
  n.grad_bytes = numOrNull(n.grad_bytes);
  n.peak_bytes = numOrNull(n.peak_bytes);
  n.rank_spread_ms = numOrNull(n.rank_spread_ms);
  return n as unknown as GraphNode;
}
