import { describe, expect, it } from "vitest";
import { decodeDocument, decodeGraph, normaliseGraph } from "../src/model/decode";
import { GraphModel } from "../src/model/graph";
import { MAX_PAYLOAD_BYTES, gunzip, unpackPayload } from "../src/model/packed";
import { decodeDiff } from "../src/diff/decode";
import { NODE_KEYS, EDGE_KEYS } from "../src/schema/types";
import { PayloadBuilder, gzipBytes } from "./pack";

/** The same three-node graph as records (version 1) and as a packed graph using every column form. */
const records = {
  format: "graphwidget", version: 1,
  meta: { roots: [0], traced: true, timed: true, title: "three", modules: { "": "Net", fc: "Linear" } },
  nodes: [
    { id: 0, op: "SumBackward0", kind: "backward", outputs: [{ shape: [], dtype: "float32", device: "cpu" }], saved: [], attrs: {},
      saved_bytes: 0, tensor: null, source: "m.py:3", code: "y.sum()", module: "", seq: 2, fwd_ms: 0.5, bwd_ms: null, grad_bytes: 4, lib_source: null },
    { id: 1, op: "MulBackward0", kind: "backward", outputs: [{ shape: [2], dtype: "float32", device: "cpu" }],
      saved: [{ name: "self", shape: [2], bytes: 8 }], attrs: { alpha: 1 }, saved_bytes: 8, tensor: null, source: "m.py:2",
      code: "y = x * x", module: "fc", seq: 1, fwd_ms: 1.25, bwd_ms: 2, grad_bytes: null, lib_source: "torch/nn/x.py:1" },
    { id: 2, op: "AccumulateGrad", kind: "leaf", outputs: [{ shape: [2], dtype: "float32", device: "cpu" }], saved: [], attrs: {},
      saved_bytes: 0, tensor: { shape: [2], dtype: "float32", name: "x" }, source: null, code: null, module: "fc", seq: null,
      fwd_ms: null, bwd_ms: null, grad_bytes: 8, lib_source: null },
  ],
  edges: [
    { source: 1, target: 0, output: 0, slot: 0, shape: [2], dtype: "float32", also: null },
    { source: 2, target: 1, output: 0, slot: 0, shape: [2], dtype: "float32", also: [{ output: 0, slot: 1, shape: [2], dtype: "float32" }] },
  ],
};

function packedThree(b: PayloadBuilder, ids = [0, 1, 2], src = [1, 2], tgt = [0, 1]): Record<string, unknown> {
  const n = records.nodes;
  const outs = [n[0].outputs, n[1].outputs];
  return {
    $packed: "graph", format: "graphwidget", version: 2, meta: records.meta, findings: null,
    nodes: {
      count: 3, id: b.ints(ids, true), op: b.table(["SumBackward0", "MulBackward0", "AccumulateGrad"], [0, 1, 2]),
      kind: b.table(["backward", "leaf"], [0, 0, 1]), outputs: b.table(outs, [0, 1, 1]), saved: b.rows(n.map((x) => x.saved)),
      attrs: b.rows(n.map((x) => x.attrs)), saved_bytes: b.ints([0, 8, 0]), tensor: b.rows(n.map((x) => x.tensor)),
      source: b.rows(n.map((x) => x.source)), code: b.rows(n.map((x) => x.code)), module: b.table(["", "fc"], [0, 1, 1]),
      out_stride: { const: null }, out_contiguous: { const: null }, seq: b.intsWithNulls([2, 1, null]),
      fwd_ms: b.nums([0.5, 1.25, null]), bwd_ms: b.nums([null, 2, null]), grad_bytes: b.intsWithNulls([4, null, 8]),
      lib_source: b.rows(n.map((x) => x.lib_source)),
    },
    edges: {
      count: src.length, source: b.ints(src), target: b.ints(tgt), output: { const: 0 }, slot: b.table([0], src.map(() => 0)),
      shape: { const: [2] }, dtype: { const: "float32" }, also: b.rows(src.map((_, k) => records.edges[k]?.also ?? null)),
    },
  };
}

async function packedBytes(make: (b: PayloadBuilder) => unknown, opts = {}): Promise<Uint8Array> {
  const b = new PayloadBuilder();
  return gzipBytes(b.finish(make(b), opts));
}

const fields = (x: object, keys: readonly string[]) => Object.fromEntries(keys.map((k) => [k, (x as Record<string, unknown>)[k]]));

describe("the binary payload", () => {
  it("reads every column form to the same nodes and edges as the records", async () => {
    const doc = await decodeGraph(await packedBytes((b) => packedThree(b)));
    const ref = normaliseGraph(structuredClone(records));
    expect(doc.nodes).toHaveLength(3);
    for (let i = 0; i < 3; i++) expect(fields(doc.nodes[i], ["id", ...NODE_KEYS])).toEqual(fields(ref.nodes[i], ["id", ...NODE_KEYS]));
    for (let k = 0; k < 2; k++) expect(fields(doc.edges[k], ["source", "target", ...EDGE_KEYS])).toEqual(fields(ref.edges[k], ["source", "target", ...EDGE_KEYS]));
    expect(doc.meta.title).toBe("three");
    expect(doc.meta.modules).toEqual({ "": "Net", fc: "Linear" });
    // a row is its record for JSON (the automation API, a debugger)
    expect(JSON.parse(JSON.stringify(doc.nodes[1]))).toMatchObject({ id: 1, op: "MulBackward0", saved_bytes: 8, code: "y = x * x" });
  });

  it("indexes the graph exactly as from records", async () => {
    const doc = await decodeGraph(await packedBytes((b) => packedThree(b)));
    const a = new GraphModel(doc), r = new GraphModel(normaliseGraph(structuredClone(records)));
    expect(Array.from(a.eSrc)).toEqual(Array.from(r.eSrc));
    expect(Array.from(a.topo)).toEqual(Array.from(r.topo));
    expect(a.indexOf.get(2)).toBe(2);
    expect(a.indexOf.get(3)).toBeUndefined();
    expect(a.edges).toHaveLength(2);
  });

  it("maps ids that are not 0..n-1 and drops edges to unknown ids, as for records", async () => {
    const doc = await decodeGraph(await packedBytes((b) => packedThree(b, [10, 20, 30], [20, 30, 99], [10, 20, 10])));
    const m = new GraphModel(doc);
    expect(m.indexOf.get(30)).toBe(2);
    expect(m.indexOf.get(1)).toBeUndefined();
    expect(m.edges).toHaveLength(2); // 99 -> 10 names no node
    expect(Array.from(m.predsOf(0))).toEqual([1]);
  });

  it("reads the payload from base64 text and an unaligned DataView", async () => {
    const gz = await packedBytes((b) => packedThree(b));
    const b64 = btoa(String.fromCharCode(...gz));
    expect((await decodeGraph({ base64: b64 })).nodes[2].op).toBe("AccumulateGrad");
    const b = new PayloadBuilder();
    const raw = b.finish(packedThree(b));
    const odd = new Uint8Array(raw.length + 3);
    odd.set(raw, 3);
    const copy = odd.slice();
    expect((await decodeGraph(new DataView(odd.buffer, 3, raw.length))).nodes[1].code).toBe("y = x * x");
    expect(odd).toEqual(copy); // the caller's bytes are left as they were (ids add up their deltas in a copy)
  });

  it("puts packed graphs inside a diff document", async () => {
    const gz = await packedBytes((b) => ({ format: "graphwidget-diff", version: 1, labels: ["A", "B"], matched: [[0, 0]], a: packedThree(b), b: packedThree(b) }));
    const d = await decodeDiff(gz);
    expect(d.a.nodes[1].op).toBe("MulBackward0");
    expect(d.b.edges[1].also).toEqual(records.edges[1].also);
  });

  it("shows a row whose JSON is broken as absent, not as an exception", async () => {
    const doc = await decodeGraph(await packedBytes((b) => {
      const g = packedThree(b);
      (g.nodes as Record<string, unknown>).code = b.rows([], ['"ok"', "{broken", "nul"]);
      return g;
    }));
    expect(doc.nodes.map((n) => n.code)).toEqual(["ok", null, null]);
  });
});

describe("a payload that cannot be shown says why", () => {
  const refused = async (bytes: Uint8Array | Promise<Uint8Array>) => {
    try {
      await decodeDocument(await bytes);
    } catch (err) {
      return (err as Error).message;
    }
    return "(decoded)";
  };

  it("refuses a payload bigger than the viewer holds before inflating it", async () => {
    const msg = await refused(packedBytes((b) => packedThree(b), { total: MAX_PAYLOAD_BYTES + 8 }));
    expect(msg).toMatch(/more than this viewer can hold/);
  });

  it("stops inflating at the limit, in words for what the bytes are", async () => {
    const json = new TextEncoder().encode(JSON.stringify({ ...records, pad: "x".repeat(5000) }));
    await expect(gunzip(await gzipBytes(json), 1000)).rejects.toThrow(/more than 1,000 bytes of JSON text, longer than this browser can hold in one string; export the graph again/);
    const b = new PayloadBuilder();
    await expect(gunzip(await gzipBytes(b.finish(packedThree(b))), 100)).rejects.toThrow(/more than this viewer can hold/);
  });

  it("refuses a truncated or overlong payload", async () => {
    const b = new PayloadBuilder();
    const raw = b.finish(packedThree(b));
    expect(await refused(gzipBytes(raw.subarray(0, raw.length - 16)))).toMatch(/truncated/);
    const longer = new Uint8Array(raw.length + 64);
    longer.set(raw);
    expect(await refused(gzipBytes(longer))).toMatch(/more than the .* bytes its header gives/);
  });

  it("refuses a newer layout by name", async () => {
    expect(await refused(packedBytes((b) => packedThree(b), { version: 9 }))).toMatch(/layout version 9, newer than this viewer/);
  });

  it("refuses sections outside the payload, indices past a table, bad offsets and counts", async () => {
    expect(await refused(packedBytes((b) => packedThree(b), { spans: [[8, 10 ** 9]] }))).toMatch(/outside the payload/);
    expect(await refused(packedBytes((b) => {
      const g = packedThree(b);
      (g.nodes as Record<string, unknown>).op = b.table(["A", "B"], [0, 1, 7]);
      return g;
    }))).toMatch(/nodes\.op\.index\[2\] is 7, past the table's 2 entries/);
    expect(await refused(packedBytes((b) => {
      const g = packedThree(b);
      const col = b.rows(["a", "b", "c"]);
      const offs = new Uint32Array(b.sections[col.offsets as number].buffer.slice(0));
      offs[1] = 5; offs[2] = 1;
      b.sections[col.offsets as number] = new Uint8Array(offs.buffer);
      (g.nodes as Record<string, unknown>).code = col;
      return g;
    }))).toMatch(/nodes\.code\.offsets must/);
    expect(await refused(packedBytes((b) => ({ ...packedThree(b), nodes: { count: -1 } })))).toMatch(/nodes\.count must be/);
    expect(await refused(packedBytes((b) => {
      const g = packedThree(b);
      (g.nodes as Record<string, unknown>).seq = b.ints([1, 2]); // two rows for three nodes
      return g;
    }))).toMatch(/nodes\.seq\.ints holds 8 bytes where 3 rows need 12/);
    expect(await refused(packedBytes((b) => {
      const g = packedThree(b);
      (g.nodes as Record<string, unknown>).id = b.rows([0, -1, "x"]);
      return g;
    }))).toMatch(/nodes\.id\[1\] must be a non-negative integer/);
  });

  it("refuses bytes that are not gzip, a packed payload or JSON", async () => {
    expect(await refused(new Uint8Array([0x1f, 0x8b, 1, 2, 3, 4]))).toMatch(/not valid gzip/);
    expect(await refused(new TextEncoder().encode("{not json"))).toMatch(/JSON/);
  });

  it("unpacks where it is asked to and transfers what it made", async () => {
    const { value, transfer } = await unpackPayload(await packedBytes((b) => packedThree(b)));
    expect(value.kind).toBe("packed");
    expect(transfer.length).toBeGreaterThan(0);
    expect(new Set(transfer).size).toBe(transfer.length);
  });
});
