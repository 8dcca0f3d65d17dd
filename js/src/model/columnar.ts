/**
 * A packed graph (model/packed.ts) as the GraphDoc the views read, without a record per node in memory: every node
 * and edge is a small object holding its row number, and its fields are getters on a prototype shared by the
 * graph's rows, reading the columns. A field is normalised as a record's is (fields.ts) (absent optional
 * fields are null), once per table entry for a table column, on read for the others. The JSON text of a `rows`
 * column is parsed when that row's field is read (the inspector, a tooltip), never for the whole graph at load.
 *
 * GraphModel (model/graph.ts) reads the ids and edge ends straight from the typed arrays (`columnsOf`).
 */
import type { GraphDoc, GraphEdge, GraphNode } from "../schema/types";
import { normaliseFindings } from "./findings";
import { rowReader, type PackedColumn, type PackedGraph } from "./packed";
import { normaliseMeta } from "./meta";
import { EDGE_FIELDS, NODE_FIELDS, type Normalise } from "./fields";
import { num } from "./read";

/** The typed arrays behind a columnar GraphDoc's ids and edges. */
export interface GraphColumns {
  ids: Int32Array | Float64Array;
  source: Int32Array | Float64Array;
  target: Int32Array | Float64Array;
}

const COLUMNS = new WeakMap<GraphDoc, GraphColumns>();

/** The typed arrays of a columnar document (null for a document of records). */
export function columnsOf(doc: GraphDoc): GraphColumns | null {
  return COLUMNS.get(doc) ?? null;
}

const raw: Normalise = (v) => v;

/** row → value of one column, normalised. */
function reader(c: PackedColumn, norm: Normalise): (i: number) => unknown {
  switch (c.form) {
    case "const": {
      const v = norm(c.value);
      return () => v;
    }
    case "table": {
      const table = c.table.map(norm);
      const index = c.index;
      return (i) => table[index[i]];
    }
    case "ints": {
      const { values, nulls } = c;
      const hasNull = nulls !== null && nulls.some((z) => z !== 0);
      if (norm === num || norm === raw) return hasNull ? (i) => (nulls![i] ? null : values[i]) : (i) => values[i];
      return (i) => norm(hasNull && nulls![i] ? null : values[i]);
    }
    case "nums": {
      const values = c.values;
      return (i) => norm(Number.isNaN(values[i]) ? null : values[i]);
    }
    case "rows": {
      const read = rowReader(c.text, c.offsets);
      return (i) => norm(read(i));
    }
  }
}

/**
 * A class per graph: its rows hold only their number; each field is a getter on the prototype. `toJSON` gives the
 * record (what JSON.stringify or the automation API shows).
 */
function rowClass(fields: [string, (i: number) => unknown][]): new (i: number) => { readonly $i: number } {
  const Row = class {
    constructor(readonly $i: number) {}
  };
  const proto = Row.prototype as unknown as Record<string, unknown>;
  for (const [key, read] of fields) {
    Object.defineProperty(proto, key, { get(this: { $i: number }) { return read(this.$i); }, enumerable: true });
  }
  Object.defineProperty(proto, "toJSON", {
    value(this: { $i: number }) {
      const out: Record<string, unknown> = {};
      for (const [key, read] of fields) out[key] = read(this.$i);
      return out;
    },
  });
  return Row;
}

function fieldsOf(cols: Record<string, PackedColumn>, known: Record<string, Normalise>): [string, (i: number) => unknown][] {
  const out: [string, (i: number) => unknown][] = [];
  // every known field, absent ones normalised from undefined (as decode.ts fills a record), then the others as sent
  for (const [key, norm] of Object.entries(known)) {
    const c = cols[key];
    if (c) out.push([key, reader(c, norm)]);
    else {
      const v = norm(undefined);
      out.push([key, () => v]);
    }
  }
  for (const [key, c] of Object.entries(cols)) if (!(key in known)) out.push([key, reader(c, raw)]);
  return out;
}

/** The GraphDoc of a packed graph (checks of the envelope as decode.ts's normaliseGraph). */
export function columnarGraph(p: PackedGraph): GraphDoc {
  if (p.format !== undefined && p.format !== "graphwidget") throw new Error(`not a graphwidget graph (format=${String(p.format)})`);
  const ids = p.ids, source = p.source, target = p.target;
  const nodeFields = fieldsOf(p.nodes, NODE_FIELDS);
  nodeFields.unshift(["id", (i) => ids[i]]);
  const NodeRow = rowClass(nodeFields);
  const edgeFields = fieldsOf(p.edges, EDGE_FIELDS);
  edgeFields.unshift(["source", (i) => source[i]], ["target", (i) => target[i]]);
  const EdgeRow = rowClass(edgeFields);
  const nodes = new Array<GraphNode>(p.n);
  for (let i = 0; i < p.n; i++) nodes[i] = new NodeRow(i) as unknown as GraphNode;
  const edges = new Array<GraphEdge>(p.m);
  for (let k = 0; k < p.m; k++) edges[k] = new EdgeRow(k) as unknown as GraphEdge;
  const doc: GraphDoc = {
    format: "graphwidget",
    version: typeof p.version === "number" ? p.version : 2,
    meta: normaliseMeta(p.meta),
    nodes,
    edges,
    findings: normaliseFindings(p.findings),
  };
  COLUMNS.set(doc, { ids, source, target });
  return doc;
}
