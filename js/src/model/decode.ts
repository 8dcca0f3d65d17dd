/**
 * Decoding the graph document: bytes → a validated, normalised GraphDoc.
 *
 * The bytes are the same in the widget (the `_graph` trait) and in the export (a base64 <script> block): since the
 * binary payload (graphwidget/views/packed.py, read by model/packed.ts) a gzip'd container of typed columns; before
 * it, gzip'd UTF-8 JSON with one record per node, which is still read (older exports, hand-written test pages).
 * Gzip is undone with the browser's native DecompressionStream, so no inflate library is bundled. Unpacking runs in
 * a worker when the caller passes one ({@link Unpacker}: the view's layout worker), else here.
 */
import type { GraphDoc, GraphEdge, GraphNode } from "../schema/types";
import { normaliseFindings } from "./findings";
import { normaliseMeta } from "./meta";
import { columnarGraph } from "./columnar";
import { EDGE_FIELDS, NODE_FIELDS } from "./fields";
import { AGAIN, PayloadError, unpackPayload, type PackedGraph, type Unpacked } from "./packed";
import { arr } from "./read";

export { base64ToBytes, gunzip, isGzip, toBytes } from "./packed";

/** Runs {@link unpackPayload} somewhere (the layout worker: layout/client.ts), or here with `here`. */
export interface Unpacker {
  unpack(data: unknown, here: (data: unknown) => Promise<Unpacked>): Promise<Unpacked>;
}

const unpackHere = async (data: unknown): Promise<Unpacked> => (await unpackPayload(data)).value;

/**
 * Bytes, base64 text (`{ base64 }`) or a JSON string → the parsed document (any of the three formats), its graphs
 * packed ({@link PackedGraph}) when the payload is the binary one.
 */
export async function decodeDocument(value: unknown, unpacker?: Unpacker | null, timings?: { unpack: number }): Promise<unknown> {
  const u = unpacker ? await unpacker.unpack(value, unpackHere) : await unpackHere(value);
  if (timings) timings.unpack = u.ms;
  return u.kind === "packed" ? u.doc : parseJson(u.bytes);
}

/** UTF-8 JSON text → value, saying so when the text is longer than this browser's strings can be. */
export function parseJson(bytes: Uint8Array): unknown {
  const text = new TextDecoder("utf-8").decode(bytes);
  if (!text.length && bytes.length) {
    // V8 holds at most 2**29 - 24 characters in a string, and Chromium's TextDecoder returns "" past it
    throw new PayloadError(`the graph data is ${(bytes.length / 2 ** 20).toFixed(0)} MiB of JSON text, longer than this browser can hold in one string; ${AGAIN}`);
  }
  return JSON.parse(text);
}

/** Bytes (a payload, binary or JSON) → validated, normalised document. */
export async function decodeGraph(value: unknown, unpacker?: Unpacker | null, timings?: { unpack: number }): Promise<GraphDoc> {
  return normaliseGraph(await decodeDocument(value, unpacker, timings));
}

function isPackedGraph(v: unknown): v is PackedGraph {
  return !!v && typeof v === "object" && (v as PackedGraph).$packed === "graph";
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
  if (isPackedGraph(raw)) return columnarGraph(raw);
  if (!raw || typeof raw !== "object") throw new Error("graph JSON must be an object");
  const o = raw as Record<string, unknown>;
  checkFormat(o, "graphwidget", "graph");
  const nodes = arr<Record<string, unknown>>(o.nodes).map(normaliseNode);
  const edges = arr<Record<string, unknown>>(o.edges).map((e): GraphEdge => {
    // in place, as for nodes
    e.source = Number(e.source);
    e.target = Number(e.target);
    for (const [k, norm] of EDGE_ENTRIES) e[k] = norm(e[k]);
    return e as unknown as GraphEdge;
  });
  return {
    format: "graphwidget",
    version: typeof o.version === "number" ? o.version : 1,
    meta: normaliseMeta(o.meta),
    nodes,
    edges,
    // the advisor's findings (null: never advised); kept, not dropped with the other unknown top-level keys
    findings: normaliseFindings(o.findings),
  };
}

const NODE_ENTRIES = Object.entries(NODE_FIELDS);
const EDGE_ENTRIES = Object.entries(EDGE_FIELDS);

/** Fills a node record in place (the record is freshly parsed: copying 100k records would only cost time). */
function normaliseNode(n: Record<string, unknown>): GraphNode {
  n.id = Number(n.id);
  for (const [k, norm] of NODE_ENTRIES) n[k] = norm(n[k]);
  return n as unknown as GraphNode;
}
