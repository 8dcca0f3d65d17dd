import { describe, expect, it } from "vitest";
import { base64ToBytes, decodeGraph, isGzip, normaliseGraph, toBytes } from "../src/model/decode";
import { GraphModel } from "../src/model/graph";

/** gzip with the platform's CompressionStream (the browser side only needs the inverse). */
async function gzip(text: string): Promise<Uint8Array> {
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

const sample = {
  format: "graphwidget", version: 1,
  meta: { roots: [0], traced: false, timed: true, title: "t" },
  nodes: [{ id: 0, op: "MulBackward0", kind: "backward" }, { id: 1, op: "AccumulateGrad", kind: "leaf" }],
  edges: [{ source: 1, target: 0 }, { source: 1, target: 0, slot: 1 }, { source: 7, target: 0 }],
};

describe("decoding", () => {
  it("inflates gzip bytes with DecompressionStream", async () => {
    const gz = await gzip(JSON.stringify(sample));
    expect(isGzip(gz)).toBe(true);
    const d = await decodeGraph(gz);
    expect(d.nodes).toHaveLength(2);
    expect(d.meta.timed).toBe(true);
  });

  it("accepts plain JSON bytes, DataView and base64", async () => {
    const bytes = new TextEncoder().encode(JSON.stringify(sample));
    expect((await decodeGraph(bytes)).nodes[1].op).toBe("AccumulateGrad");
    expect((await decodeGraph(new DataView(bytes.buffer))).nodes).toHaveLength(2);
    const b64 = btoa(String.fromCharCode(...(await gzip(JSON.stringify(sample)))));
    expect((await decodeGraph(base64ToBytes(b64))).meta.title).toBe("t");
    expect(toBytes(new ArrayBuffer(3)).length).toBe(3);
  });

  it("fills absent optional fields with null and rejects other formats", () => {
    const d = normaliseGraph(sample);
    const n = d.nodes[0];
    expect(n.saved).toEqual([]);
    expect(n.fwd_ms).toBeNull();
    expect(n.module).toBeNull();
    expect(n.outputs).toBeNull();
    expect(d.edges[0].shape).toBeNull();
    expect(d.edges[0].also).toBeNull();
    const also = [{ output: 0, slot: 1, shape: [2], dtype: "float32" }];
    expect(normaliseGraph({ ...sample, edges: [{ source: 1, target: 0, also }] }).edges[0].also).toEqual(also);
    expect(() => normaliseGraph({ format: "other", nodes: [] })).toThrow(/not a graphwidget graph/);
    expect(() => normaliseGraph({ format: "graphwidget", version: 2, nodes: [] })).toThrow(/newer/);
  });

  it("indexes distinct neighbours and drops dangling edges", () => {
    const m = new GraphModel(normaliseGraph(sample));
    expect(m.edges).toHaveLength(2); // the edge from unknown id 7 is dropped
    expect(m.inDegree(0)).toBe(1); // x*x: two edges, one input node
    expect(Array.from(m.succsOf(1))).toEqual([0]);
    expect(m.topo[1]).toBeLessThan(m.topo[0]);
  });
});
