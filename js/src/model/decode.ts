/**
 * Decoding the graph document: bytes (gzip or plain UTF-8 JSON) → a validated, normalised GraphDoc.
 *
 * The bytes are the same in the widget (the `_graph` trait) and in the export (a base64 <script> block):
 * UTF-8 JSON, optionally gzip-compressed. Gzip is undone with the browser's native DecompressionStream, so
 * no inflate library is bundled.
 */
import type { GraphDoc, GraphEdge, GraphNode } from "../schema/types";

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
      also: Array.isArray(e.also) ? (e.also as GraphEdge["also"]) : null,
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
