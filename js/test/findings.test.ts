import { describe, expect, it } from "vitest";
import { normaliseGraph } from "../src/model/decode";
import { FindingMarks, LEVEL_INFO, LEVEL_NONE, LEVEL_RESOLVED, LEVEL_WARNING, normaliseFindings, shortSource } from "../src/model/findings";
import { GraphModel } from "../src/model/graph";
import { diffFindings, normaliseDiff } from "../src/diff/decode";

const finding = (rule: string, nodes: number[], severity = "warning", extra: Record<string, unknown> = {}) => ({
  rule, severity, nodes, source: "/a/b/model.py:54", code: "h = x.repeat(1, 4)", module: null,
  message: "m", suggestion: null, evidence: { bytes: 10 }, ...extra,
});

const graph = (findings?: unknown) => ({
  format: "graphwidget", version: 1, meta: { roots: [0] },
  nodes: [0, 1, 2, 3, 4].map((id) => ({ id, op: `Op${id}`, kind: "backward" })),
  edges: [[1, 0], [2, 1], [3, 2], [4, 3]].map(([s, t]) => ({ source: s, target: t })),
  ...(findings === undefined ? {} : { findings }),
});

describe("findings on decode", () => {
  it("keeps the findings list; absent or null stays null (never advised), [] stays []", () => {
    const d = normaliseGraph(graph([finding("repeat-broadcast", [2, 1])]));
    expect(d.findings).toHaveLength(1);
    expect(d.findings![0]).toMatchObject({ rule: "repeat-broadcast", severity: "warning", nodes: [2, 1], source: "/a/b/model.py:54" });
    expect(normaliseGraph(graph()).findings).toBeNull();
    expect(normaliseGraph(graph(null)).findings).toBeNull();
    expect(normaliseGraph(graph([])).findings).toEqual([]);
  });

  it("drops what a view cannot show and fills the rest", () => {
    const fs = normaliseFindings([
      finding("a", [1]), { rule: "", message: "x" }, { rule: "no-message" }, 7, null,
      { rule: "b", message: "m", severity: "loud", nodes: [1, "x", 2] },
    ])!;
    expect(fs.map((f) => f.rule)).toEqual(["a", "b"]);
    expect(fs[1]).toMatchObject({ severity: "info", nodes: [1, 2], source: null, code: null, suggestion: null, evidence: {} });
  });

  it("shortens a source path as Python's short_source does", () => {
    expect(shortSource("/work/main/graphwidget/examples/homography.py:54")).toBe("homography.py:54");
    expect(shortSource("C:\\x\\m.py:3")).toBe("m.py:3");
    expect(shortSource("model.py")).toBe("model.py");
    expect(shortSource(null)).toBe("?");
  });
});

describe("FindingMarks", () => {
  const model = new GraphModel(normaliseGraph(graph()));
  const fs = normaliseFindings([finding("w", [3, 2, 99]), finding("i", [2, 4], "info"), finding("r", [0], "warning")])!;
  const marks = new FindingMarks(model, fs, new Set([2]));

  it("maps ids to indices (unknown ids dropped, cause first) and levels per node", () => {
    expect([...marks.nodes[0]]).toEqual([3, 2]);
    expect([...marks.level]).toEqual([LEVEL_WARNING, LEVEL_INFO, LEVEL_RESOLVED]);
    expect([...marks.nodeLevel]).toEqual([LEVEL_RESOLVED, LEVEL_NONE, LEVEL_WARNING, LEVEL_WARNING, LEVEL_INFO]);
    expect([...marks.nodeCount]).toEqual([1, 0, 2, 1, 1]);
    expect(marks.findingsOf(2)).toEqual([0, 1]);
    expect([...marks.mask(1)]).toEqual([0, 0, 1, 0, 1]);
  });

  it("counts distinct findings per drawn item (a group holding two nodes of one finding counts one)", () => {
    // items: 0 = node 0, 1 = node 1, 2 = a group of nodes 2, 3, 4
    const { level, count } = marks.perItem(Int32Array.from([0, 1, 2, 2, 2]), 3);
    expect([...count]).toEqual([1, 0, 2]);
    expect([...level]).toEqual([LEVEL_RESOLVED, LEVEL_NONE, LEVEL_WARNING]);
  });
});

describe("findings of a diff", () => {
  const base = {
    format: "graphwidget-diff", version: 1, labels: ["A", "B"], matched: [], changed: [], removed: [], added: [],
    summary: {}, changes: {},
  };

  it("reads {a, b, resolved} and keeps resolved indices that exist", () => {
    const doc = normaliseDiff({ ...base, a: graph(), b: graph(), findings: { a: [finding("x", [1]), finding("y", [2])], b: [finding("y", [2])], resolved: [0, 5, -1] } });
    const f = diffFindings(doc);
    expect(f.a!.map((x) => x.rule)).toEqual(["x", "y"]);
    expect(f.b!.map((x) => x.rule)).toEqual(["y"]);
    expect([...f.resolved]).toEqual([0]);
  });

  it("falls back to each graph's own findings, with nothing resolved, when the diff's key is null", () => {
    const doc = normaliseDiff({ ...base, a: graph([finding("x", [1])]), b: graph(), findings: null });
    const f = diffFindings(doc);
    expect(f.a!.map((x) => x.rule)).toEqual(["x"]);
    expect(f.b).toBeNull();
    expect(f.resolved.size).toBe(0);
  });
});
