/**
 * The first view says what the model is: modules carry their class names, identical sibling modules fold into
 * one group (only when they really are identical), chains are named after their ops, small modules open flat,
 * and a tall drawing is wrapped into columns that fit the pane.
 */
import { describe, expect, it } from "vitest";
import { Hierarchy, type Cluster } from "../src/model/grouping";
import { buildView, expansionLevels, groupName } from "../src/model/view";
import { signature, spanName } from "../src/model/repeats";
import { computeLayout } from "../src/layout";
import { layoutInput, place, saysLittle } from "../src/canvas/layouter";
import { cutText } from "../src/canvas/measure";
import { LEGIBLE_SCALE, type LayoutInput } from "../src/layout/types";
import { doc, node } from "./graphs";
import { GraphModel } from "../src/model/graph";

const measure = () => ({ w: 120, h: 36, dl: "", ds: "" });

/** A decoder of `n` blocks (attention: 5 ops, mlp: 3 ops, a residual add), module paths as a trace records them. */
function decoder(n: number, classes = true, odd = -1): GraphModel {
  const nodes: ReturnType<typeof node>[] = [];
  const edges: [number, number][] = [];
  const add = (op: string, module: string) => { nodes.push(node(nodes.length, op, { module })); return nodes.length - 1; };
  let prev = add("EmbeddingBackward0", "tok");
  for (let b = 0; b < n; b++) {
    const p = `blocks.${b}`;
    let x = prev;
    const ops = b === odd ? ["MmBackward0", "SoftmaxBackward0", "MmBackward0"] : ["MmBackward0", "DivBackward0", "MaskedFillBackward0", "SoftmaxBackward0", "MmBackward0"];
    for (const op of ops) { const y = add(op, `${p}.attn`); edges.push([x, y]); x = y; }
    for (const op of ["AddmmBackward0", "GeluBackward0", "AddmmBackward0"]) { const y = add(op, `${p}.mlp`); edges.push([x, y]); x = y; }
    const sum = add("AddBackward0", p);
    edges.push([x, sum], [prev, sum]);
    prev = sum;
  }
  const head = add("MmBackward0", "head");
  edges.push([prev, head]);
  const modules: Record<string, string> = { "": "Decoder", tok: "Embedding", blocks: "ModuleList", head: "Linear" };
  for (let b = 0; b < n; b++) Object.assign(modules, { [`blocks.${b}`]: "DecoderBlock", [`blocks.${b}.attn`]: "CausalSelfAttention", [`blocks.${b}.mlp`]: "MLP" });
  return new GraphModel(doc(nodes, edges, classes ? { modules } : {}));
}

describe("module classes", () => {
  it("titles modules by name and class", () => {
    const m = decoder(2);
    const h = new Hierarchy(m);
    const attn = h.allClusters().find((c) => c.path === "blocks.1.attn")!;
    expect(attn.cls).toBe("CausalSelfAttention");
    expect(groupName(attn)).toBe("attn · CausalSelfAttention");
    const v = buildView(m, h, new Set<Cluster>([h.root, ...h.allClusters()]), measure);
    expect(v.frames.map((f) => f.title)).toContain("attn · CausalSelfAttention · 5 ops");
  });

  it("says nothing of classes an older file does not carry", () => {
    const h = new Hierarchy(decoder(2, false));
    const attn = h.allClusters().find((c) => c.path === "blocks.1.attn")!;
    expect(attn.cls).toBeNull();
    expect(groupName(attn)).toBe("attn");
  });
});

describe("folding repeated modules", () => {
  it("folds identical sibling blocks into one group that opens into them", () => {
    const m = decoder(12);
    const h = new Hierarchy(m);
    const folds = h.allClusters().filter((c) => c.kind === "repeat");
    expect(folds).toHaveLength(1);
    const f = folds[0];
    expect(f.label).toBe("blocks.0–11");
    expect(f.cls).toBe("DecoderBlock");
    expect(f.repeat).toEqual({ count: 12, each: 9 });
    expect(groupName(f)).toBe("blocks.0–11 · DecoderBlock ×12");
    expect(f.parent).toBe(h.root); // the ModuleList holding only the run is the fold
    expect(f.children.map((c) => (c as Cluster).path)).toEqual(Array.from({ length: 12 }, (_, i) => `blocks.${i}`));
    const closed = buildView(m, h, new Set<Cluster>([h.root]), measure);
    expect(closed.items.filter((it) => it.cluster).map((it) => it.label)).toEqual(["blocks.0–11 · DecoderBlock ×12"]);
    expect(closed.items.find((it) => it.cluster)!.sublabel).toBe("9 ops each");
  });

  it("folds only what is truly identical: a block with other ops splits the run", () => {
    const m = decoder(12, true, 5);
    const h = new Hierarchy(m);
    const folds = h.allClusters().filter((c) => c.kind === "repeat").map((c) => c.label).sort();
    expect(folds).toEqual(["blocks.0–4", "blocks.6–11"]);
    const b0 = h.allClusters().find((c) => c.path === "blocks.0")!;
    const b5 = h.allClusters().find((c) => c.path === "blocks.5")!;
    expect(signature(m, b0)).not.toBe(signature(m, b5));
  });

  it("names runs", () => {
    expect(spanName(["transformer.h.0", "transformer.h.1", "transformer.h.11"])).toBe("h.0–11");
    expect(spanName(["enc.a", "enc.b"])).toBe("a – b");
  });
});

describe("small modules open flat", () => {
  it("makes no chain groups inside a module of a few ops, names chains after their ops elsewhere", () => {
    const m = decoder(2);
    const h = new Hierarchy(m);
    expect(h.allClusters().some((c) => c.kind === "chain")).toBe(false);
    const big = new Hierarchy(m, { flatUpTo: 0 });
    const chains = big.allClusters().filter((c) => c.kind === "chain").map((c) => c.label);
    expect(chains).toContain("Mm · Div · MaskedFill · …");
  });
});

describe("the first view fits the pane", () => {
  it("wraps a tall chain into columns that fit a wide pane legibly", () => {
    const n = 40;
    const inp: LayoutInput = {
      w: new Float64Array(n).fill(120), h: new Float64Array(n).fill(36),
      src: Int32Array.from({ length: n - 1 }, (_, i) => i), dst: Int32Array.from({ length: n - 1 }, (_, i) => i + 1),
      pane: { w: 1200, h: 700 },
    };
    const r = computeLayout(inp);
    const xs = new Set(Array.from(r.x, (x) => Math.round(x)));
    expect(xs.size).toBeGreaterThan(2); // columns
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (let i = 0; i < n; i++) { x0 = Math.min(x0, r.x[i] - 60); x1 = Math.max(x1, r.x[i] + 60); y0 = Math.min(y0, r.y[i] - 18); y1 = Math.max(y1, r.y[i] + 18); }
    expect(Math.min((1200 - 48) / (x1 - x0), (700 - 48) / (y1 - y0))).toBeGreaterThanOrEqual(LEGIBLE_SCALE);
    // no two boxes overlap, and every edge still starts at its source and ends at its target
    for (let a = 0; a < n; a++) for (let b = a + 1; b < n; b++) {
      expect(Math.abs(r.x[a] - r.x[b]) < 120 && Math.abs(r.y[a] - r.y[b]) < 36).toBe(false);
    }
    for (let k = 0; k < n - 1; k++) {
      const p = r.pts.subarray(r.ptOff[k], r.ptOff[k + 1]);
      expect(Math.abs(p[0] - r.x[k])).toBeLessThan(61);
      expect(Math.abs(p[p.length - 2] - r.x[k + 1])).toBeLessThan(61);
    }
    // without a pane size nothing is wrapped
    const plain = computeLayout({ ...inp, pane: undefined });
    expect(new Set(Array.from(plain.x, (x) => Math.round(x))).size).toBe(1);
  });

  it("keeps frames around their contents when their contents wrap", () => {
    const m = decoder(30, true);
    const h = new Hierarchy(m, { minRepeat: 99 });
    const all = new Set<Cluster>([h.root, ...h.allClusters()]);
    const v = buildView(m, h, all, measure, (t) => t.length * 7);
    const r = computeLayout(layoutInput(v, { w: 1400, h: 800 }));
    place(v, r);
    v.items.forEach((it) => {
      if (it.frame < 0) return;
      const f = v.frames[it.frame];
      expect(it.x - it.w / 2).toBeGreaterThanOrEqual(f.x - f.w / 2 - 1e-6);
      expect(it.x + it.w / 2).toBeLessThanOrEqual(f.x + f.w / 2 + 1e-6);
      expect(it.y - it.h / 2).toBeGreaterThanOrEqual(f.y - f.h / 2 - 1e-6);
      expect(it.y + it.h / 2).toBeLessThanOrEqual(f.y + f.h / 2 + 1e-6);
    });
  });

  it("offers the levels from the top level to everything", () => {
    const m = decoder(12);
    const h = new Hierarchy(m);
    const levels = expansionLevels(m, h);
    expect(levels[0].size).toBe(1);
    for (let k = 1; k < levels.length; k++) expect(levels[k].size).toBeGreaterThan(levels[k - 1].size);
  });
});

describe("labels cut to their box", () => {
  // one unit of width per character, as a monospaced font would measure
  const w = (t: string) => t.length;
  it("keeps a trailing count: the ×N says a box stands for many", () => {
    expect(cutText(w, "h.0–11 · GPT2Block ×12", 16, false)).toBe("h.0–11 · GP… ×12");
    expect(cutText(w, "Mul ×8", 10, false)).toBe("Mul ×8");
    expect(cutText(w, "attn · CausalSelfAttention", 12, false)).toBe("attn · Caus…");
    expect(cutText(w, "encoder.layers.3.attn", 10, true)).toBe("…rs.3.attn");
    // no room even for the count: cut as any other
    expect(cutText(w, "Select · Unsqueeze ×12", 4, false)).toBe("Sel…");
  });
});

describe("a top level that says little opens one level further", () => {
  it("two boxes holding nearly everything say little; many boxes, or few holding little, say something", () => {
    const g = decoder(12);
    const h = new Hierarchy(g);
    const top = buildView(g, h, new Set(), measure);
    // tok, the fold and the head: a fold is the summary already
    expect(top.items.some((it) => it.cluster?.kind === "repeat")).toBe(true);
    expect(saysLittle(top, g.n)).toBe(false);
    const fake = (sizes: number[], loose: number) => ({ items: [...sizes.map((size) => ({ cluster: { size, kind: "module" } })),
      ...Array.from({ length: loose }, () => ({ cluster: null }))] }) as unknown as Parameters<typeof saysLittle>[0];
    expect(saysLittle(fake([590, 4], 2), 600)).toBe(true);
    expect(saysLittle(fake([300, 4], 2), 600)).toBe(false);
    expect(saysLittle(fake([200, 200, 190], 1), 600)).toBe(false);
  });
});
