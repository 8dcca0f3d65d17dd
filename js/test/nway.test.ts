import { describe, expect, it } from "vitest";
import { normaliseNway } from "../src/nway/doc";
import { NWayModel } from "../src/nway/model";
import { RankTimes } from "../src/nway/ranks";
import { verdictText } from "../src/nway/header";
import { gridColumns, roomForPanel } from "../src/nway/app";
import { GraphModel } from "../src/model/graph";
import { ST_ADDED, ST_CHANGED, ST_REMOVED, ST_UNCHANGED } from "../src/diff/model";
import { node } from "./graphs";

const graph = (ids: number[]) => ({ format: "graphwidget", version: 1, meta: { roots: [ids[0]] }, nodes: ids.map((i) => node(i, `Op${i}`)), edges: [] });
const pair = (side: number, matched: [number, number][], extra: Record<string, unknown> = {}) =>
  ({ side, matched, changed: [], removed: [], added: [], summary: {}, changes: {}, findings: null, regions: [], ...extra });

// reference 0..3; "refactor" renumbers and changes node 1; "compiled" has one region (9) covering 1 and 2
const raw = {
  format: "graphwidget-nway", version: 1, kind: "sides", labels: ["eager", "refactor", "compiled"],
  graphs: [graph([0, 1, 2, 3]), graph([10, 11, 12, 13, 14]), graph([0, 9, 3])],
  pairs: [
    pair(2, [[0, 0], [3, 3]], { removed: [1, 2], regions: [{ node: 9, op: "CompiledFunctionBackward", covers: [1, 2], inputs: [3], consumers: [0] }], added: [9] }),
    pair(1, [[0, 10], [2, 12], [3, 13]], { changed: [[1, 11, ["saved_bytes"]]], added: [14] }),
  ],
  verdicts: [],
  table: { columns: [], rows: [
    { label: "eager", reference: true, maths: "reference" },
    { label: "refactor", reference: false, maths: "same maths (float32 rounding)", equivalent: true, step: { verdict: "faster", text: "1.9× faster [1.7–2.1]" }, added: 1, changed: 1, removed: 0 },
    { label: "compiled", reference: false, maths: "DIFFERENT maths", equivalent: false, fused: { regions: 1, covers: 2 }, removed: 2 },
  ] },
  sentence: "vs eager: …", ranks: null,
};

describe("N-way document and matching", () => {
  const doc = normaliseNway(raw);
  const m = new NWayModel(doc, doc.graphs.map((g) => new GraphModel(g)));
  const idx = (k: number, id: number) => m.models[k].indexOf.get(id)!;

  it("is read with its pairs in side order and its table rows by label", () => {
    expect(doc.pairs.map((p) => p.side)).toEqual([1, 2]);
    expect(doc.rows.map((r) => r.label)).toEqual(["eager", "refactor", "compiled"]);
    expect(() => normaliseNway({ ...raw, pairs: raw.pairs.slice(1) })).toThrow(/one pair per graph/);
    expect(() => normaliseNway({ format: "graphwidget-diff" })).toThrow(/not a graphwidget N-way/);
  });

  it("links every pane through the reference, a fused node to its region", () => {
    const ids = (k: number, id: number) => m.counterparts(k, idx(k, id)).map((c, j) => m.idOf(j, c.node));
    expect(ids(0, 2)).toEqual([2, 12, 9]);
    expect(m.counterparts(0, idx(0, 2))[2].fused).toBe(true);
    expect(ids(1, 13)).toEqual([3, 13, 3]);
    expect(ids(1, 14)).toEqual([null, 14, null]); // only in the refactor
    expect(ids(2, 9)).toEqual([null, null, 9]); // the region itself has no reference node
    expect(m.regions[2].get(idx(2, 9))?.covers).toEqual([1, 2]);
  });

  it("marks each pane: changed / added in a side; changed or missing somewhere in the reference", () => {
    expect([...m.status[0]]).toEqual([ST_UNCHANGED, ST_REMOVED, ST_REMOVED, ST_UNCHANGED]);
    expect(m.status[1][idx(1, 11)]).toBe(ST_CHANGED);
    expect(m.status[1][idx(1, 14)]).toBe(ST_ADDED);
    expect(m.missingIn(idx(0, 1))).toEqual([2]);
    expect([...m.presentIn]).toEqual([2, 1, 1, 2]);
  });

  it("says each side's verdict against the reference from the table", () => {
    expect(verdictText(doc.rows[0], "sides", "eager")).toBe("reference");
    expect(verdictText(doc.rows[1], "sides", "eager")).toBe("same maths (float32 rounding) · step 1.9× faster [1.7–2.1] · 1 only here · 1 changed");
    expect(verdictText(doc.rows[2], "sides", "eager")).toBe("DIFFERENT maths · 1 compiled region covering 2 nodes");
  });
});

describe("ranks", () => {
  const ranks = {
    world_size: 3, ranks: [0, 1, 2], shown: [0, 1, 2], reference_rank: 0, groups: [[0, 2], [1]], per_rank: [],
    straggler: { rank: 2, compute_ms: 50, median_ms: 10, excess_ms: 40, node: 1, node_excess_ms: 39 },
    divergent: [{ rank: 1, added: [5], removed: [], lines: ["/x/train.py:12"], first: { node: 5, op: "MulBackward0", source: "/x/train.py:12", code: "h = h * 2", in: "rank" } }],
    nodes: { ids: [0, 1], fwd_ms: { 0: [1, 1], 1: [1, 1], 2: [1, 1] }, bwd_ms: { 0: [2, 3], 1: [2, null], 2: [2, 42] },
      step_ms: { 0: [3, 4], 1: [3, null], 2: [3, 43] },
      stats: { min: [3, 4], median: [3, 23.5], max: [3, 43], straggler: [null, 2], spread_ms: [0, 39] } },
  };
  const t = new RankTimes(normaliseNway({ ...raw, kind: "ranks", labels: ["rank 0", "rank 1", "rank 2"], ranks }).ranks!);

  it("gives a node's time on every rank with its statistics and slowest rank", () => {
    const n = t.of(1)!;
    expect(n.rows.map((r) => r.step)).toEqual([4, null, 43]);
    expect([n.min, n.median, n.max, n.straggler]).toEqual([4, 23.5, 43, 2]);
    expect(t.of(7)).toBeNull();
  });

  it("badges the straggler's pane and a divergent rank's pane", () => {
    const fmt = (ms: number) => `${ms} ms`;
    expect(t.badges(0, fmt)).toEqual([]);
    expect(t.badges(1, fmt).map((b) => [b.kind, b.text])).toEqual([["divergent", "graph differs at train.py:12"]]);
    expect(t.badges(2, fmt).map((b) => [b.kind, b.text])).toEqual([["straggler", "straggler +40 ms"]]);
  });
});

describe("pane grid", () => {
  it("keeps panes side by side while they fit, else balanced rows", () => {
    expect(gridColumns(3, 1000)).toBe(3);
    expect(gridColumns(3, 660)).toBe(2);
    expect(gridColumns(4, 980)).toBe(2);
    expect(gridColumns(4, 1300)).toBe(4);
    expect(gridColumns(2, 200)).toBe(1);
  });
});

describe("the side panel's room", () => {
  it("opens beside three panes only when each keeps 300 px next to a panel of at least 340", () => {
    // a notebook's output (950), 800 px and Lab's full width: the panel would squeeze three panes to slivers
    expect(roomForPanel(3, 950)).toBe(false);
    expect(roomForPanel(3, 800)).toBe(false);
    expect(roomForPanel(3, 1300)).toBe(true);
    // two panes fit beside it sooner; one pane always at 640
    expect(roomForPanel(2, 950)).toBe(true);
    expect(roomForPanel(1, 640)).toBe(true);
    expect(roomForPanel(1, 600)).toBe(false);
  });
});
