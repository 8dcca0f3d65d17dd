import { describe, expect, it } from "vitest";
import { Hierarchy, clusterTitle, type Cluster } from "../src/model/grouping";
import { buildView, initialExpansion } from "../src/model/view";
import { boxOp } from "../src/model/names";
import { chain, fanin, model, node, randomDag } from "./graphs";
import { GraphModel } from "../src/model/graph";

const measure = () => ({ w: 80, h: 30, dl: "", ds: "" });
const collapsed = (h: Hierarchy) => new Set<Cluster>([h.root]);

describe("chain grouping", () => {
  it("collapses the single-input/single-output run of a chain into one group", () => {
    const m = chain(10); // root(0, one input) ← 1..8 (one in, one out) ← leaf 9
    const h = new Hierarchy(m);
    const chains = h.allClusters().filter((c) => c.kind === "chain");
    expect(chains).toHaveLength(1);
    expect(chains[0].size).toBe(8);
    expect(chains[0].label).toBe("Mul ×8"); // named after its ops, not "chain"
    const v = buildView(m, h, collapsed(h), measure);
    expect(v.items).toHaveLength(3); // leaf, chain ×8, root
    expect(v.edges).toHaveLength(2);
  });

  it("does not group runs shorter than minChain", () => {
    const h = new Hierarchy(chain(4)); // run of 2
    expect(h.allClusters()).toHaveLength(0);
    expect(h.grouped).toBe(false);
  });

  it("splits a huge chain into bounded blocks (lazy expansion stays cheap)", () => {
    const m = chain(5000);
    const h = new Hierarchy(m, { maxChildren: 100 });
    const top = h.allClusters().find((c) => c.kind === "chain" && c.parent === h.root)!;
    expect(top.size).toBe(4998);
    expect(top.children.length).toBeLessThanOrEqual(100);
    for (const c of h.allClusters()) expect(c.children.length).toBeLessThanOrEqual(100);
    const ids = new Set(h.allClusters().map((c) => c.id));
    expect(ids.size).toBe(h.allClusters().length);
    // expanding everything shows every node
    const all = new Set<Cluster>([h.root, ...h.allClusters()]);
    expect(buildView(m, h, all, measure).items).toHaveLength(5000);
  });
});

describe("fan-in grouping", () => {
  it("groups many same-op siblings feeding one node", () => {
    const m = fanin(50);
    const h = new Hierarchy(m);
    const f = h.allClusters().filter((c) => c.kind === "fanin");
    expect(f).toHaveLength(1);
    expect(f[0].size).toBe(50);
    expect(f[0].label).toBe("AccumulateGrad ×50");
    const v = buildView(m, h, collapsed(h), measure);
    expect(v.items).toHaveLength(2);
    expect(v.edges).toHaveLength(1);
    expect(v.edges[0].count).toBe(50);
  });
});

describe("module grouping", () => {
  const nodes = [
    node(0, "SumBackward0", { module: "" }),
    node(1, "ReluBackward0", { module: "enc.layers.0" }),
    node(2, "AddmmBackward0", { module: "enc.layers.0" }),
    node(3, "ReluBackward0", { module: "enc.layers.1" }),
    node(4, "AddmmBackward0", { module: "enc.layers.1" }),
    node(5, "AccumulateGrad", { module: "enc.layers.1" }),
    node(6, "AccumulateGrad", { module: "head" }), // a one-node module dissolves
  ];
  const edges: [number, number][] = [[1, 0], [2, 1], [3, 2], [4, 3], [5, 4], [6, 0]];

  it("nests by path, merges single-child levels, dissolves one-node modules", () => {
    const m = model(nodes, edges);
    const h = new Hierarchy(m, { minChain: 99, minFanIn: 99 });
    const mods = h.allClusters().filter((c) => c.kind === "module");
    const paths = mods.map((c) => c.path).sort();
    // "enc" only holds "enc.layers": merged into it
    expect(paths).toEqual(["enc.layers", "enc.layers.0", "enc.layers.1"]);
    const layers = mods.find((c) => c.path === "enc.layers")!;
    expect(layers.parent).toBe(h.root);
    expect(layers.size).toBe(5);
    const l1 = mods.find((c) => c.path === "enc.layers.1")!;
    expect(clusterTitle(l1)).toBe("1");
    expect(h.parentOf[6]).toBe(h.root);
    const v = buildView(m, h, collapsed(h), measure);
    expect(v.items.map((it) => it.cluster?.path ?? m.nodes[it.node].op).sort()).toEqual(["AccumulateGrad", "SumBackward0", "enc.layers"]);
    expect(h.ancestors(4).map((c) => c.path)).toEqual(["enc.layers", "enc.layers.1"]);
  });

  it("aggregates edges between groups and drops edges inside one", () => {
    const m = model(nodes, edges);
    const h = new Hierarchy(m, { minChain: 99, minFanIn: 99 });
    const layers = h.allClusters().find((c) => c.path === "enc.layers")!;
    const v = buildView(m, h, new Set([h.root]), measure);
    const g = v.itemOfCluster.get(layers.id)!;
    expect(v.edges.filter((e) => e.s === g || e.t === g)).toHaveLength(1);
    for (let i = 1; i <= 5; i++) expect(v.rep[i]).toBe(g);
  });
});

describe("initial expansion", () => {
  it("shows small graphs fully expanded", () => {
    const m = chain(100);
    const h = new Hierarchy(m);
    const v = buildView(m, h, initialExpansion(m, h), measure);
    expect(v.items).toHaveLength(100);
  });

  it("keeps big graphs under the item budget", () => {
    const m = randomDag(20000, 5);
    const h = new Hierarchy(m);
    const exp = initialExpansion(m, h, { fullUpTo: 2000, budget: 400 });
    const v = buildView(m, h, exp, measure);
    expect(v.items.length).toBeLessThanOrEqual(400);
    expect(v.items.length).toBeGreaterThan(20);
    // every node is represented by exactly one drawn item
    for (let i = 0; i < m.n; i++) expect(v.rep[i]).toBeGreaterThanOrEqual(0);
  });
});

describe("what a node's box says", () => {
  it("drops Backward0 and shortens the long op names a notebook pane's box cannot hold", () => {
    expect(boxOp("RepeatBackward0")).toBe("Repeat");
    expect(boxOp("AccumulateGrad")).toBe("AccGrad");
    expect(boxOp("ConvolutionBackward0")).toBe("Conv");
    expect(boxOp("ScaledDotProductEfficientAttentionBackward0")).toBe("SDPA eff");
    expect(boxOp("NativeLayerNormBackward0")).toBe("LayerNorm");
    // the rest as they are, and a custom Function's name untouched
    expect(boxOp("SelectBackward0")).toBe("Select");
    expect(boxOp("MyFunctionBackward")).toBe("MyFunction");
    expect(boxOp("CompiledFunctionBackward")).toBe("CompiledFunction");
  });

  it("gives a node item its box form while the item keeps the full op for the tooltip", () => {
    const m = model([node(0, "AccumulateGrad")], []);
    const seen: string[] = [];
    const v = buildView(m, new Hierarchy(m), new Set(), (label) => { seen.push(label); return measure(); });
    expect(seen).toEqual(["AccGrad"]);
    expect(v.items[0].label).toBe("AccumulateGrad");
  });
});

describe("blocks of a graph without modules", () => {
  const dag = (n: number, source: ((i: number) => string) | null) => {
    const m = randomDag(n, 3);
    const nodes = m.doc.nodes.map((x, i) => ({ ...x, source: source && x.kind !== "leaf" ? source(i) : null }));
    return new GraphModel({ ...m.doc, nodes });
  };

  it("are named after the lines that made their nodes, then their commonest op", () => {
    const h = new Hierarchy(dag(3000, (i) => `/home/u/work/loop.py:${10 + (i % 3)}`));
    const ranges = h.allClusters().filter((c) => c.kind === "range");
    expect(ranges.length).toBeGreaterThan(1);
    for (const r of ranges) expect(r.label).toMatch(/^loop\.py:10–12 · Add ×\d+$/);
  });

  it("say + when some nodes come from another file, and fall back to the op mix without lines", () => {
    const mixed = new Hierarchy(dag(3000, (i) => (i % 50 ? `C:\\work\\loop.py:7` : `/lib/helpers.py:99`)));
    for (const r of mixed.allClusters().filter((c) => c.kind === "range")) expect(r.label).toMatch(/^loop\.py:7 \+ · Add ×\d+$/);
    const bare = new Hierarchy(dag(3000, null));
    for (const r of bare.allClusters().filter((c) => c.kind === "range")) expect(r.label).toMatch(/^Add ×\d+/);
  });
});
