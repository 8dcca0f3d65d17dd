import { describe, expect, it } from "vitest";
import { layeredLayout, placeRow, backEdges, longestPathLayers } from "../src/layout/layered";
import { dagreLayout } from "../src/layout/dagre";
import { computeLayout } from "../src/layout";
import { MAX_ROW_W, NODE_SEP, type LayoutInput, type LayoutResult } from "../src/layout/types";
import { layoutInput, place } from "../src/canvas/layouter";
import { Hierarchy, type Cluster } from "../src/model/grouping";
import { buildView } from "../src/model/view";
import { model, node } from "./graphs";

function input(n: number, edges: [number, number][], w = 80, h = 30): LayoutInput {
  return {
    w: Float64Array.from({ length: n }, (_, i) => w + (i % 3) * 20),
    h: new Float64Array(n).fill(h),
    src: Int32Array.from(edges, (e) => e[0]),
    dst: Int32Array.from(edges, (e) => e[1]),
  };
}

function randomEdges(n: number, seed: number, window = 8): [number, number][] {
  let s = seed;
  const rnd = () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648);
  const set = new Set<string>();
  const out: [number, number][] = [];
  for (let k = 1; k < n; k++) {
    const c = 1 + Math.floor(rnd() * 3);
    for (let j = 0; j < c; j++) {
      const src = Math.max(0, k - 1 - Math.floor(rnd() * window));
      const key = `${src}-${k}`;
      if (!set.has(key)) { set.add(key); out.push([src, k]); }
    }
  }
  return out;
}

function checkLayout(inp: LayoutInput, r: LayoutResult, acyclic: boolean): void {
  const n = inp.w.length;
  // every node gets finite coordinates
  for (let i = 0; i < n; i++) {
    expect(Number.isFinite(r.x[i])).toBe(true);
    expect(Number.isFinite(r.y[i])).toBe(true);
  }
  // layers respect edge direction: a source is drawn above its target
  if (acyclic) for (let k = 0; k < inp.src.length; k++) expect(r.y[inp.src[k]]).toBeLessThan(r.y[inp.dst[k]]);
  // no overlaps within a layer (same y)
  const rows = new Map<number, number[]>();
  for (let i = 0; i < n; i++) {
    const key = Math.round(r.y[i] * 100);
    (rows.get(key) ?? rows.set(key, []).get(key)!).push(i);
  }
  for (const row of rows.values()) {
    row.sort((a, b) => r.x[a] - r.x[b]);
    for (let j = 1; j < row.length; j++) {
      const a = row[j - 1], b = row[j];
      expect(r.x[b] - r.x[a]).toBeGreaterThanOrEqual((inp.w[a] + inp.w[b]) / 2 - 1e-6);
    }
  }
  // every edge has a polyline that starts at its source and ends at its target
  expect(r.ptOff.length).toBe(inp.src.length + 1);
  for (let k = 0; k < inp.src.length; k++) expect(r.ptOff[k + 1] - r.ptOff[k]).toBeGreaterThanOrEqual(4);
}

describe("layered layout", () => {
  it("lays out a random DAG: coordinates, direction, no overlaps", () => {
    const inp = input(400, randomEdges(400, 7));
    const r = layeredLayout(inp);
    expect(r.algorithm).toBe("layered");
    checkLayout(inp, r, true);
  });

  it("keeps the minimum gap between neighbours in a layer", () => {
    const edges: [number, number][] = Array.from({ length: 30 }, (_, i) => [i + 1, 0]);
    const inp = input(31, edges);
    const r = layeredLayout(inp);
    // a layer this wide is folded onto several rows (MAX_ROW_W): the gaps hold within each of them
    const rows = new Map<number, number[]>();
    for (let i = 1; i <= 30; i++) rows.set(r.y[i], [...(rows.get(r.y[i]) ?? []), i]);
    for (const row of rows.values()) {
      row.sort((a, b) => r.x[a] - r.x[b]);
      for (let j = 1; j < row.length; j++) {
        const a = row[j - 1], b = row[j];
        expect(r.x[b] - r.x[a]).toBeGreaterThanOrEqual((inp.w[a] + inp.w[b]) / 2 + NODE_SEP - 1e-6);
      }
    }
  });

  it("folds a very wide layer onto rows, so the drawing is not a line", () => {
    const edges: [number, number][] = Array.from({ length: 200 }, (_, i) => [i + 1, 0]);
    const inp = input(201, edges);
    const r = layeredLayout(inp);
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (let i = 0; i <= 200; i++) {
      x0 = Math.min(x0, r.x[i] - inp.w[i] / 2); x1 = Math.max(x1, r.x[i] + inp.w[i] / 2);
      y0 = Math.min(y0, r.y[i] - inp.h[i] / 2); y1 = Math.max(y1, r.y[i] + inp.h[i] / 2);
    }
    expect(x1 - x0).toBeLessThanOrEqual(MAX_ROW_W + 1);
    expect((x1 - x0) / (y1 - y0)).toBeLessThan(8);
    for (let i = 1; i <= 200; i++) expect(r.y[i]).toBeLessThan(r.y[0]); // still above their consumer
  });

  it("places a leaf next to its consumer, not on the top row", () => {
    // 0→1→2→3→4 and leaf 5 → 4: longest-path-to-sink puts 5 one layer above 4
    const inp = input(6, [[0, 1], [1, 2], [2, 3], [3, 4], [5, 4]]);
    const r = layeredLayout(inp);
    expect(r.y[5]).toBe(r.y[3]);
  });

  it("survives cycles (collapsed groups can form them)", () => {
    const inp = input(4, [[0, 1], [1, 2], [2, 0], [2, 3]]);
    expect(backEdges(4, inp.src, inp.dst).reduce((a, b) => a + b, 0)).toBe(1);
    checkLayout(inp, layeredLayout(inp), false);
  });

  it("packs isolated nodes into a block instead of one row", () => {
    const inp = input(100, []);
    const r = layeredLayout(inp);
    checkLayout(inp, r, true);
    const ys = new Set(Array.from(r.y, (y) => Math.round(y)));
    expect(ys.size).toBeGreaterThan(3);
  });

  it("handles a deep chain without recursion limits", () => {
    const n = 20000;
    const edges: [number, number][] = Array.from({ length: n - 1 }, (_, i) => [i, i + 1]);
    const inp = input(n, edges);
    const r = layeredLayout(inp);
    for (let i = 1; i < n; i++) expect(r.y[i]).toBeGreaterThan(r.y[i - 1]);
  });

  it("layers with longest path: edges always go down", () => {
    const e = randomEdges(200, 3);
    const a = Int32Array.from(e, (x) => x[0]), b = Int32Array.from(e, (x) => x[1]);
    const layer = longestPathLayers(200, a, b);
    for (let k = 0; k < e.length; k++) expect(layer[a[k]]).toBeLessThan(layer[b[k]]);
  });
});

describe("placeRow (isotonic regression with gaps)", () => {
  it("keeps order and gaps, and stays at the desired spots when they fit", () => {
    const out = new Float64Array(3);
    placeRow(Float64Array.from([0, 100, 200]), Float64Array.from([1, 1, 1]), Float64Array.from([0, 50, 50]), out);
    expect(Array.from(out)).toEqual([0, 100, 200]);
    placeRow(Float64Array.from([10, 10, 10]), Float64Array.from([1, 1, 1]), Float64Array.from([0, 50, 50]), out);
    expect(out[1] - out[0]).toBeCloseTo(50);
    expect(out[2] - out[1]).toBeCloseTo(50);
    expect((out[0] + out[1] + out[2]) / 3).toBeCloseTo(10); // least squares: centred on the wish
  });
});

describe("dagre and dispatch", () => {
  it("dagre lays out a small graph correctly", () => {
    const inp = input(60, randomEdges(60, 11));
    const r = dagreLayout(inp);
    expect(r.algorithm).toBe("dagre");
    checkLayout(inp, r, true);
  });

  it("auto picks dagre for small views and the layered layout for big ones", () => {
    expect(computeLayout(input(50, randomEdges(50, 2))).algorithm).toBe("dagre");
    expect(computeLayout(input(2000, randomEdges(2000, 2))).algorithm).toBe("layered");
    expect(computeLayout(input(0, [])).x.length).toBe(0);
  });
});

describe("a pane's layout input (canvas/layouter.ts)", () => {
  it("carries every item's size, every edge and, with groups open, the frames; the result goes back into the view", () => {
    const nodes = Array.from({ length: 60 }, (_, i) => node(i, i === 59 ? "AccumulateGrad" : "MulBackward0", { module: `layers.${Math.floor(i / 15)}.mlp` }));
    const m = model(nodes, Array.from({ length: 59 }, (_, i): [number, number] => [i + 1, i]));
    const h = new Hierarchy(m);
    const v = buildView(m, h, new Set<Cluster>([h.root, ...h.allClusters()]), (label) => ({ w: 40 + label.length, h: 26, dl: label, ds: "" }));
    expect(v.frames.length).toBeGreaterThan(0);
    const inp = layoutInput(v);
    expect(Array.from(inp.w)).toEqual(v.items.map((it) => it.w));
    expect(Array.from(inp.h)).toEqual(v.items.map((it) => it.h));
    expect(Array.from(inp.src)).toEqual(v.edges.map((e) => e.s));
    expect(Array.from(inp.dst)).toEqual(v.edges.map((e) => e.t));
    expect(Array.from(inp.owner!)).toEqual(v.items.map((it) => it.frame));
    expect(Array.from(inp.fparent!)).toEqual(v.frames.map((f) => f.parent));
    expect(Array.from(inp.fminw!)).toEqual(v.frames.map((f) => f.minW));
    place(v, computeLayout(inp));
    for (const it of v.items) expect(Number.isFinite(it.x) && Number.isFinite(it.y)).toBe(true);
    for (const f of v.frames) expect(f.w).toBeGreaterThanOrEqual(f.minW);
    for (const e of v.edges) expect(e.points!.length).toBeGreaterThanOrEqual(4);
    // nothing open: no frame arrays
    const flat = layoutInput(buildView(m, h, new Set<Cluster>([h.root]), () => ({ w: 50, h: 26, dl: "", ds: "" })));
    expect(flat.owner).toBeUndefined();
  });
});
