/**
 * Reading the binary payload (graphwidget/views/packed.py describes the layout): bytes or base64 text → the
 * document, each graph in it a {@link PackedGraph} of typed arrays and tables. Nothing in a graph becomes one big
 * string: a million-node graph as JSON text is longer than a JavaScript string may be (V8: 2**29 - 24 characters;
 * Chromium's TextDecoder then returns "" without an error).
 *
 * This runs in the layout worker (entries/layout-worker.ts), off the main thread: inflating, the header, the
 * tables and the checks. What it returns is structured-clonable, and its typed arrays are views on buffers listed in
 * `transfer`, moved to the page without a copy. Every check here stops a hostile or truncated payload with an
 * error that says what is wrong, which the view shows in the page; the per-row JSON of the `rows` columns is read
 * later, row by row, when the view needs it (model/columnar.ts).
 *
 * Old payloads (gzip'd UTF-8 JSON, before this layout existed) come back as `{ kind: "json", bytes }` for the
 * caller to parse, as before.
 */

/** The first four bytes of a payload (before gzip). */
export const MAGIC = "GWPK";
/** The layout version this reader knows (views/packed.py PACK_VERSION). */
export const PACK_VERSION = 1;
/** magic, version, header length (uint32 LE each), payload length (float64 LE) */
const FIXED = 20;
/**
 * The most a payload may inflate to. One ArrayBuffer holds it, and the renderer holds the graph built from it
 * besides: past this a tab would more likely be killed for memory than show the graph, so the view says so instead.
 */
export const MAX_PAYLOAD_BYTES = 2 ** 31 - 1;
/**
 * An older payload is one JSON text, which V8 holds in at most 2**29 - 24 UTF-16 units (three UTF-8 bytes each at
 * most): inflating past this cannot give a text the page can parse.
 */
export const MAX_JSON_BYTES = 3 * (2 ** 29 - 24);
/** Rows of a graph (nodes or edges) this reader accepts: typed arrays index them with 32-bit integers. */
export const MAX_ROWS = 2 ** 31 - 1;

export type IndexArray = Uint8Array | Uint16Array | Uint32Array;

/** One column of a packed graph, resolved to arrays (views/packed.py lists the forms as written). */
export type PackedColumn =
  /** every row holds `value` */
  | { form: "const"; value: unknown }
  /** row i holds table[index[i]] */
  | { form: "table"; table: unknown[]; index: IndexArray }
  /** int32 per row; nulls[i] === 1: row i is null */
  | { form: "ints"; values: Int32Array; nulls: Uint8Array | null }
  /** float64 per row, NaN for null */
  | { form: "nums"; values: Float64Array }
  /** row i is the JSON text text[offsets[i]:offsets[i + 1]] */
  | { form: "rows"; text: Uint8Array; offsets: Uint32Array };

/** A graph of the payload: its envelope, ids and edge ends as numbers, and its other columns. */
export interface PackedGraph {
  $packed: "graph";
  format: unknown;
  version: unknown;
  meta: unknown;
  findings: unknown;
  n: number;
  m: number;
  ids: Int32Array | Float64Array;
  source: Int32Array | Float64Array;
  target: Int32Array | Float64Array;
  nodes: Record<string, PackedColumn>;
  edges: Record<string, PackedColumn>;
}

/** What unpacking gives, with the milliseconds it took (where it ran: the worker's, usually). */
export type Unpacked =
  /** a payload of this layout: the document with its graphs as PackedGraph */
  | { kind: "packed"; doc: unknown; ms: number }
  /** an older payload: UTF-8 JSON text, parsed by the caller */
  | { kind: "json"; bytes: Uint8Array; ms: number };

/** Base64 text from the export's <script> block, decoded where it is unpacked (in the worker). */
export interface Base64Data { base64: string }

export function isBase64Data(v: unknown): v is Base64Data {
  return !!v && typeof v === "object" && typeof (v as Base64Data).base64 === "string";
}

/** A payload that cannot be shown: the message says what is wrong (the view shows it in the page). */
export class PayloadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PayloadError";
  }
}

/** Accepts whatever a widget model hands out for a Bytes trait (DataView in Jupyter) or a test passes. */
export function toBytes(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (typeof value === "string") return new TextEncoder().encode(value);
  throw new TypeError(`graph data must be bytes, got ${value === null ? "null" : typeof value}`);
}

type FromBase64 = { fromBase64?: (s: string) => Uint8Array };

export function base64ToBytes(b64: string): Uint8Array {
  const clean = b64.replace(/\s+/g, "");
  const native = (Uint8Array as unknown as FromBase64).fromBase64;
  if (native) return native(clean); // Chrome 140+, Firefox 133+, Safari 18.2+: no binary string in between
  const bin = atob(clean);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

export function isGzip(bytes: Uint8Array): boolean {
  return bytes.length > 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
}

function mib(n: number): string {
  return n >= 2 ** 20 ? `${(n / 2 ** 20).toFixed(0)} MiB` : `${n.toLocaleString("en")} bytes`;
}

/**
 * Inflates gzip with the browser's native DecompressionStream, chunk by chunk, stopping at `limit` bytes (a gzip
 * bomb is refused, not allocated). A packed payload's own length, read from its first bytes, sizes the result
 * exactly, so it is not held twice.
 */
export async function gunzip(bytes: Uint8Array, limit = MAX_PAYLOAD_BYTES): Promise<Uint8Array> {
  if (typeof DecompressionStream === "undefined") {
    throw new Error("this browser has no DecompressionStream; open the graph in a current Chrome, Edge, Firefox or Safari");
  }
  const reader = new Blob([bytes as BlobPart]).stream().pipeThrough(new DecompressionStream("gzip")).getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let out: Uint8Array | null = null;
  let probed = false;
  /** the packed payload's own length (null: not known yet, or an older payload) */
  let total: number | null = null;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (out) {
        if (size + value.length > out.length) throw new PayloadError(`the graph data inflates to more than the ${out.length.toLocaleString("en")} bytes its header gives: the payload is damaged`);
        out.set(value, size);
        size += value.length;
        continue;
      }
      size += value.length;
      chunks.push(value);
      if (!probed && size >= FIXED) {
        probed = true;
        total = packedLength(concat(chunks, size));
        if (total === null) limit = Math.min(limit, MAX_JSON_BYTES); // an older payload: one JSON text
      }
      if (size > limit) {
        throw new PayloadError(total === null ? `the graph data is more than ${mib(limit)} of JSON text, longer than this browser can hold in one string; ${AGAIN}`
          : `the graph data inflates to more than ${mib(limit)}, more than this viewer can hold; show a smaller graph (a part of it)`);
      }
      if (total !== null) {
        if (total > limit) throw new PayloadError(`the graph data is ${mib(total)}, more than this viewer can hold (${mib(limit)}); show a smaller graph (a part of it)`);
        if (total < size) throw new PayloadError(`the graph data inflates to more than the ${total.toLocaleString("en")} bytes its header gives: the payload is damaged`);
        out = new Uint8Array(total);
        out.set(concat(chunks, size));
        chunks.length = 0;
      }
    }
  } catch (err) {
    void reader.cancel().catch(() => {});
    if (err instanceof PayloadError) throw err;
    throw new PayloadError(`the graph data is not valid gzip (${(err as Error)?.message ?? String(err)})`);
  }
  if (out) {
    if (size !== out.length) throw new PayloadError(`the graph data ends after ${size.toLocaleString("en")} of the ${out.length.toLocaleString("en")} bytes its header gives: the payload is truncated`);
    return out;
  }
  return concat(chunks, size);
}

/** What to do about an older payload too long for one string. */
export const AGAIN = "export the graph again with a current graphwidget (it sends graphs as binary columns, which have no such limit)";

function concat(chunks: Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) { out.set(c, at); at += c.length; }
  chunks.length = 0;
  chunks.push(out);
  return out;
}

function isPacked(bytes: Uint8Array): boolean {
  return bytes.length >= 4 && bytes[0] === 0x47 && bytes[1] === 0x57 && bytes[2] === 0x50 && bytes[3] === 0x4b; // GWPK
}

/** The whole payload's length from its fixed header, or null when these bytes are not a packed payload. */
function packedLength(bytes: Uint8Array): number | null {
  if (!isPacked(bytes) || bytes.length < FIXED) return null;
  const total = new DataView(bytes.buffer, bytes.byteOffset, FIXED).getFloat64(12, true);
  if (!Number.isInteger(total) || total < FIXED) throw new PayloadError(`the graph data's header gives a length of ${total}: the payload is damaged`);
  return total;
}

/**
 * Bytes (gzip or not), base64 text ({@link Base64Data}) or a string of JSON → the document. Throws a
 * {@link PayloadError} that says what is wrong.
 */
export async function unpackPayload(value: unknown): Promise<{ value: Unpacked; transfer: ArrayBuffer[] }> {
  const t0 = performance.now();
  const given = isBase64Data(value) ? base64ToBytes(value.base64) : toBytes(value);
  let bytes = isGzip(given) ? await gunzip(given) : given;
  if (!isPacked(bytes)) return { value: { kind: "json", bytes, ms: performance.now() - t0 }, transfer: [] };
  if (bytes === given && !isBase64Data(value)) bytes = bytes.slice(); // the caller's bytes: reading adds up deltas in place
  const transfer: ArrayBuffer[] = [];
  const doc = readPacked(bytes, transfer);
  return { value: { kind: "packed", doc, ms: performance.now() - t0 }, transfer };
}

/** The document of a packed payload; `transfer` receives the buffers its arrays view. */
export function readPacked(bytes: Uint8Array, transfer: ArrayBuffer[]): unknown {
  if (bytes.byteOffset % 8 !== 0) bytes = bytes.slice(); // typed views below need the payload 8-byte aligned
  const total = packedLength(bytes);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = dv.getUint32(4, true);
  if (version !== PACK_VERSION) {
    throw new PayloadError(`the graph data is in layout version ${version}, ${version > PACK_VERSION ? "newer than" : "unknown to"} this viewer (${PACK_VERSION}); export it again with the graphwidget that shows it`);
  }
  if (total !== bytes.length) throw new PayloadError(`the graph data is ${bytes.length.toLocaleString("en")} bytes but its header gives ${total}: the payload is truncated or damaged`);
  const hlen = dv.getUint32(8, true);
  if (FIXED + hlen > bytes.length) throw new PayloadError(`the graph data's header claims ${hlen.toLocaleString("en")} bytes, past the end of the payload`);
  let head: { sections?: unknown; doc?: unknown };
  try {
    head = JSON.parse(new TextDecoder("utf-8").decode(bytes.subarray(FIXED, FIXED + hlen))) as typeof head;
  } catch (err) {
    throw new PayloadError(`the graph data's header is not JSON (${(err as Error).message})`);
  }
  if (!head || typeof head !== "object" || !Array.isArray(head.sections)) throw new PayloadError("the graph data's header has no list of sections");
  transfer.push(bytes.buffer as ArrayBuffer);
  const sections = new Sections(bytes, head.sections as unknown[], transfer);
  return resolveGraphs(head.doc, sections, 0);
}

/** The document with every `{"$packed": "graph"}` replaced by its PackedGraph: the top level, or one level down. */
function resolveGraphs(v: unknown, s: Sections, depth: number): unknown {
  if (!v || typeof v !== "object") return v;
  if (!Array.isArray(v) && (v as Record<string, unknown>).$packed === "graph") return readGraph(v as Record<string, unknown>, s);
  if (depth >= 2) return v;
  if (Array.isArray(v)) return v.map((x) => resolveGraphs(x, s, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) out[k] = resolveGraphs(x, s, depth + 1);
  return out;
}

class Sections {
  constructor(private bytes: Uint8Array, private spans: unknown[], private transfer: ArrayBuffer[]) {}

  /** Section k as bytes, checked against the payload. */
  get(k: unknown, at: string): Uint8Array {
    const span = typeof k === "number" && Number.isInteger(k) && k >= 0 ? this.spans[k] : undefined;
    if (!Array.isArray(span) || span.length !== 2) throw new PayloadError(`${at} names section ${JSON.stringify(k)}, which the payload does not have`);
    const [off, len] = span as [unknown, unknown];
    if (typeof off !== "number" || typeof len !== "number" || !Number.isInteger(off) || !Number.isInteger(len) || off < 0 || len < 0 || off % 8 !== 0 || off + len > this.bytes.length) {
      throw new PayloadError(`${at}: section ${k} (${JSON.stringify(span)}) lies outside the payload or is not 8-byte aligned`);
    }
    return this.bytes.subarray(off, off + len);
  }

  typed<T extends ArrayBufferView>(make: (b: ArrayBuffer, off: number, len: number) => T, size: number, k: unknown, count: number, at: string): T {
    const b = this.get(k, at);
    if (b.length !== count * size) throw new PayloadError(`${at} holds ${b.length} bytes where ${count} rows need ${count * size}`);
    return make(b.buffer as ArrayBuffer, b.byteOffset, count);
  }

  /** A new array made here (a prefix sum, a conversion) travels too. */
  own<T extends { buffer: ArrayBufferLike }>(a: T): T {
    this.transfer.push(a.buffer as ArrayBuffer);
    return a;
  }
}

const i32 = (b: ArrayBuffer, o: number, n: number) => new Int32Array(b, o, n);
const f64 = (b: ArrayBuffer, o: number, n: number) => new Float64Array(b, o, n);
const u8 = (b: ArrayBuffer, o: number, n: number) => new Uint8Array(b, o, n);
const u16 = (b: ArrayBuffer, o: number, n: number) => new Uint16Array(b, o, n);
const u32 = (b: ArrayBuffer, o: number, n: number) => new Uint32Array(b, o, n);

function count(v: unknown, at: string): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > MAX_ROWS) {
    throw new PayloadError(`${at}.count must be a number of rows from 0 to ${MAX_ROWS.toLocaleString("en")}; got ${JSON.stringify(v)}`);
  }
  return v;
}

function readGraph(g: Record<string, unknown>, s: Sections): PackedGraph {
  const nb = g.nodes as Record<string, unknown> | undefined;
  const eb = g.edges as Record<string, unknown> | undefined;
  if (!nb || typeof nb !== "object" || !eb || typeof eb !== "object") throw new PayloadError("a packed graph needs \"nodes\" and \"edges\" as objects of columns");
  const n = count(nb.count, "nodes"), m = count(eb.count, "edges");
  const nodes: Record<string, PackedColumn> = {};
  const edges: Record<string, PackedColumn> = {};
  for (const [key, col] of Object.entries(nb)) if (key !== "count") nodes[key] = readColumn(col, n, `nodes.${key}`, s);
  for (const [key, col] of Object.entries(eb)) if (key !== "count") edges[key] = readColumn(col, m, `edges.${key}`, s);
  const ints = (cols: Record<string, PackedColumn>, key: string, rows: number, at: string) => {
    const c = cols[key];
    if (!c) throw new PayloadError(`${at}.${key} is missing`);
    delete cols[key];
    return integers(c, rows, `${at}.${key}`, s);
  };
  return {
    $packed: "graph", format: g.format, version: g.version, meta: g.meta, findings: g.findings, n, m,
    ids: ints(nodes, "id", n, "nodes"), source: ints(edges, "source", m, "edges"), target: ints(edges, "target", m, "edges"),
    nodes, edges,
  };
}

function readColumn(c: unknown, rows: number, at: string, s: Sections): PackedColumn {
  const o = c && typeof c === "object" && !Array.isArray(c) ? (c as Record<string, unknown>) : null;
  if (!o) throw new PayloadError(`${at} must be a column object; got ${JSON.stringify(c)?.slice(0, 80)}`);
  if ("const" in o) return { form: "const", value: o.const };
  if ("table" in o) {
    const table = parseRows(o.table, `${at}.table`, s);
    const ix = (o.index ?? {}) as Record<string, unknown>;
    const make = ix.type === "u8" ? u8 : ix.type === "u16" ? u16 : ix.type === "u32" ? u32 : null;
    if (!make) throw new PayloadError(`${at}.index.type must be u8, u16 or u32; got ${JSON.stringify(ix.type)}`);
    const size = ix.type === "u8" ? 1 : ix.type === "u16" ? 2 : 4;
    const index = s.typed<IndexArray>(make, size, ix.section, rows, `${at}.index`);
    const t = table.length;
    for (let i = 0; i < rows; i++) if (index[i] >= t) throw new PayloadError(`${at}.index[${i}] is ${index[i]}, past the table's ${t} entries`);
    return { form: "table", table, index };
  }
  if ("ints" in o) {
    const values = s.typed(i32, 4, o.ints, rows, `${at}.ints`);
    const nulls = o.nulls === null || o.nulls === undefined ? null : s.typed(u8, 1, o.nulls, rows, `${at}.nulls`);
    if (o.delta === true) for (let i = 1; i < rows; i++) values[i] += values[i - 1];
    return { form: "ints", values, nulls };
  }
  if ("nums" in o) return { form: "nums", values: s.typed(f64, 8, o.nums, rows, `${at}.nums`) };
  if ("rows" in o) {
    const { text, offsets } = rowSpans(o, rows, at, s);
    return { form: "rows", text, offsets };
  }
  throw new PayloadError(`${at} is not a column this viewer knows (const, table, ints, nums, rows): ${Object.keys(o).join(", ")}`);
}

function rowSpans(o: Record<string, unknown>, rows: number, at: string, s: Sections): { text: Uint8Array; offsets: Uint32Array } {
  const text = s.get(o.rows, `${at}.rows`);
  const offsets = s.typed(u32, 4, o.offsets, rows + 1, `${at}.offsets`);
  if (offsets[0] !== 0 || offsets[rows] !== text.length) throw new PayloadError(`${at}.offsets must run from 0 to the ${text.length} bytes of its rows`);
  for (let i = 0; i < rows; i++) if (offsets[i + 1] < offsets[i]) throw new PayloadError(`${at}.offsets must not decrease (row ${i})`);
  return { text, offsets };
}

/** A table: one JSON text per entry, parsed here (tables are what repeats: each entry once). */
function parseRows(v: unknown, at: string, s: Sections): unknown[] {
  const o = v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  if (!o || !("rows" in o)) throw new PayloadError(`${at} must be {"rows", "offsets"}`);
  const offBytes = s.get(o.offsets, `${at}.offsets`).length;
  if (offBytes < 4 || offBytes % 4 !== 0) throw new PayloadError(`${at}.offsets must hold one uint32 per entry, and one more`);
  const t = offBytes / 4 - 1;
  const { text, offsets } = rowSpans(o, t, at, s);
  const dec = new TextDecoder("utf-8");
  const out = new Array<unknown>(t);
  for (let i = 0; i < t; i++) {
    try {
      out[i] = JSON.parse(dec.decode(text.subarray(offsets[i], offsets[i + 1])));
    } catch (err) {
      throw new PayloadError(`${at}[${i}] is not JSON (${(err as Error).message})`);
    }
  }
  return out;
}

/** Ids and edge ends as numbers, whatever their column's form; anything that is not an integer is refused. */
function integers(c: PackedColumn, rows: number, at: string, s: Sections): Int32Array | Float64Array {
  if (c.form === "ints") {
    if (c.nulls && c.nulls.some((z) => z !== 0)) throw new PayloadError(`${at} may not be null`);
    return c.values;
  }
  const out = s.own(new Float64Array(rows));
  const rowValue = c.form === "rows" ? rowReader(c.text, c.offsets) : null;
  for (let i = 0; i < rows; i++) {
    const v = c.form === "nums" ? c.values[i] : c.form === "const" ? c.value : c.form === "table" ? c.table[c.index[i]] : rowValue!(i);
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) throw new PayloadError(`${at}[${i}] must be a non-negative integer; got ${JSON.stringify(v)}`);
    out[i] = v;
  }
  return out;
}

/** Row i of a rows column, parsed (undefined when its text is not JSON: the view then shows the field as absent). */
export function rowReader(text: Uint8Array, offsets: Uint32Array): (i: number) => unknown {
  const dec = new TextDecoder("utf-8");
  return (i) => {
    const a = offsets[i], b = offsets[i + 1];
    try {
      return JSON.parse(dec.decode(text.subarray(a, b)));
    } catch {
      return undefined;
    }
  };
}
