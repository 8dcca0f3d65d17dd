import { describe, expect, it } from "vitest";
import { normaliseDiff } from "../src/diff/decode";
import { DiffModel, statusLine, ST_ADDED, ST_CHANGED, ST_REMOVED } from "../src/diff/model";
import { formatRatio } from "../src/diff/summary";
import { GraphModel } from "../src/model/graph";
import { itemStatus } from "../src/canvas/marks";
import { EDGE_KEYS, NODE_KEYS } from "../src/schema/types";
import { node } from "./graphs";

const graph = (ids: number[]) => ({ format: "graphwidget", version: 1, meta: { roots: [0] }, nodes: ids.map((i) => node(i, `Op${i}`)), edges: [] });

const raw = {
  format: "graphwidget-diff", version: 1, labels: ["left", ""],
  a: graph([0, 1, 2, 3]), b: graph([0, 1, 2, 7]),
  matched: [[0, 0], [1, 1], [2, 2]], changed: [[1, 1, ["saved_bytes"]]], removed: [3], added: [7],
  summary: { a: { nodes: 4 }, b: { nodes: 4 }, delta: { nodes: 0 }, ratio: {}, timing: null, equivalence: { equivalent: false, tensors: [{ name: "out", allclose: false }] } },
  changes: { by_op: [{ key: "Op3", removed: [3], a: { count: 1 } }] },
};

describe("diff document", () => {
  it("is normalised: labels, totals, rows and equivalence filled in", () => {
    const d = normaliseDiff(raw);
    expect(d.labels).toEqual(["left", "B"]);
    expect(d.summary.a.edges).toBeNull();
    expect(d.summary.equivalence?.equivalent).toBe(false);
    expect(d.changes.by_source).toEqual([]);
    expect(d.changes.by_op[0]).toMatchObject({ key: "Op3", added: [], removed: [3], changed: [] });
    expect(d.a.edges).toEqual([]);
    expect(() => normaliseDiff({ format: "graphwidget" })).toThrow(/not a graphwidget diff/);
    expect(() => normaliseDiff({ format: "graphwidget-diff", version: 2, a: {}, b: {} })).toThrow(/newer/);
    expect(() => normaliseDiff({ format: "graphwidget-diff", a: graph([0]) })).toThrow(/both graphs/);
  });

  it("gives every node a status and a counterpart", () => {
    const d = normaliseDiff(raw);
    const m = new DiffModel(d, [new GraphModel(d.a), new GraphModel(d.b)]);
    expect([0, 1, 2, 3].map((i) => m.statusOf(0, i))).toEqual(["unchanged", "changed", "unchanged", "removed"]);
    expect([0, 1, 2, 7].map((i) => m.statusOf(1, i))).toEqual(["unchanged", "changed", "unchanged", "added"]);
    expect(m.statusOf(1, 3)).toBeNull();
    expect(Array.from(m.counterpart[0])).toEqual([0, 1, 2, -1]);
    expect(Array.from(m.counterpart[1])).toEqual([0, 1, 2, -1]);
    expect(m.fieldsOf(1, 1)).toEqual(["saved_bytes"]);
    expect(m.counts).toEqual({ matched: 3, changed: 1, added: 1, removed: 1 });
  });
});

describe("status marks", () => {
  it("a closed group carries its members' status and count; mixed members read as changed", () => {
    const codes = Uint8Array.from([1, ST_ADDED, ST_ADDED, ST_REMOVED, ST_CHANGED, 1]);
    // items: node 0 alone, group {1, 2}, group {3, 4}, node 5
    const view = { items: [{ cluster: null }, { cluster: {} }, { cluster: {} }, { cluster: null }], rep: Int32Array.from([0, 1, 1, 2, 2, 3]) };
    const s = itemStatus(view, codes);
    expect(Array.from(s.status)).toEqual([1, ST_ADDED, ST_CHANGED, 1]);
    expect(Array.from(s.count)).toEqual([0, 2, 2, 0]);
    expect(statusLine(codes, [1, 2, 3, 4, 5], 0)).toBe("1 changed · 2 added · 1 removed");
    expect(statusLine(codes, null, 3)).toBe("removed");
  });
});

describe("summary numbers", () => {
  it("ratios keep enough digits to never read ×1 for a change", () => {
    expect(formatRatio(0.31)).toBe("×0.31");
    expect(formatRatio(1.04)).toBe("×1.04");
    expect(formatRatio(0.997)).toBe("×0.997");
    expect(formatRatio(1)).toBe("×1");
    expect(formatRatio(2)).toBe("×2");
    expect(formatRatio(250.4)).toBe("×250");
    expect(formatRatio(null)).toBe("");
  });
});

describe("schema keys", () => {
  it("match the Python order (graphwidget/model/schema.py NODE_KEYS / EDGE_KEYS)", () => {
    expect(NODE_KEYS).toEqual(["op", "kind", "outputs", "saved", "attrs", "saved_bytes", "tensor", "source", "code", "module",
      "out_stride", "out_contiguous", "seq", "fwd_ms", "bwd_ms", "grad_bytes", "lib_source"]);
    expect(EDGE_KEYS).toEqual(["output", "slot", "shape", "dtype", "also"]);
  });
});
