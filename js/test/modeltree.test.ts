/**
 * The first view of a real model reads as its module tree: parameters inside their modules (tied ones where all
 * their uses are), blocks named after what they hold, open groups as frames laid out around their contents.
 */
import { describe, expect, it } from "vitest";
import { Hierarchy, commonModule, opMix, shortModuleName, type Cluster } from "../src/model/grouping";
import { buildView, initialExpansion } from "../src/model/view";
import { compoundLayout } from "../src/layout/compound";
import { FRAME_PAD, FRAME_TITLE_H, type LayoutInput } from "../src/layout/types";
import { model, node } from "./graphs";

const measure = () => ({ w: 80, h: 30, dl: "", ds: "" });

/** A GPT-2-like capture: layers h.{i} of (ln, attn.c_attn, mlp.c_fc), parameters as leaves without a module. */
function gpt(layers: number) {
  const nodes: ReturnType<typeof node>[] = [];
  const edges: [number, number][] = [];
  const add = (op: string, extra: Parameters<typeof node>[2] = {}) => { nodes.push(node(nodes.length, op, extra)); return nodes.length - 1; };
  const leaf = (name: string) => add("AccumulateGrad", { tensor: { name, shape: [4] } });
  const loss = add("SumBackward0", { module: "" });
  const headMm = add("MmBackward0", { module: "lm_head" });
  edges.push([headMm, loss]);
  const tied = leaf("lm_head.weight"); // also the token embedding
  edges.push([tied, headMm]);
  let prev = headMm;
  for (let l = layers - 1; l >= 0; l--) {
    const m = `transformer.h.${l}`;
    const add1 = add("AddBackward0", { module: m });
    edges.push([add1, prev]);
    const fc = add("AddmmBackward0", { module: `${m}.mlp.c_fc` });
    edges.push([fc, add1], [leaf(`${m}.mlp.c_fc.weight`), fc], [leaf(`${m}.mlp.c_fc.bias`), fc]);
    const attn = add("AddmmBackward0", { module: `${m}.attn.c_attn` });
    edges.push([attn, fc], [leaf(`${m}.attn.c_attn.weight`), attn]);
    const ln = add("NativeLayerNormBackward0", { module: `${m}.ln_1` });
    edges.push([ln, attn], [leaf(`${m}.ln_1.weight`), ln]);
    prev = ln;
  }
  const emb = add("EmbeddingBackward0", { module: "transformer.wte" });
  edges.push([emb, prev], [tied, emb]);
  return model(nodes, edges);
}

describe("module tree", () => {
  it("puts a parameter leaf in the module its name says", () => {
    const m = gpt(3);
    const h = new Hierarchy(m, { minChain: 99, minFanIn: 99 });
    const w = m.nodes.findIndex((n) => n.tensor?.name === "transformer.h.1.attn.c_attn.weight");
    expect(h.parentOf[w].path).toBe("transformer.h.1.attn.c_attn");
    expect(h.ancestors(w).map((c) => c.path)).toContain("transformer.h.1");
  });

  it("puts a tied weight where all its uses are, not in one of its modules", () => {
    const m = gpt(3);
    const h = new Hierarchy(m, { minChain: 99, minFanIn: 99 });
    const tied = m.nodes.findIndex((n) => n.tensor?.name === "lm_head.weight");
    expect(h.parentOf[tied]).toBe(h.root); // lm_head and transformer.wte share it
    expect(commonModule("transformer.h.1.attn", "transformer.h.12")).toBe("transformer.h");
    expect(commonModule("transformer.h.1", "transformer.h.12")).not.toBe("transformer.h.1"); // by parts, not by characters
    expect(commonModule("a.b", "a.b.c")).toBe("a.b");
    expect(commonModule("lm_head", "transformer.wte")).toBe("");
  });

  it("folds a deep model's identical layers into one group that opens into the run", () => {
    const m = gpt(80);
    const h = new Hierarchy(m);
    const fold = h.allClusters().find((c) => c.kind === "repeat")!;
    expect(fold.label).toBe("h.0–79");
    expect(fold.repeat).toEqual({ count: 80, each: fold.children.length ? (fold.children[0] as Cluster).size : 0 });
    expect(fold.children.map((c) => (c as Cluster).path)).toEqual(Array.from({ length: 80 }, (_, i) => `transformer.h.${i}`));
    const v = buildView(m, h, initialExpansion(m, h), measure);
    const boxes = v.items.filter((it) => it.cluster).map((it) => it.label);
    expect(boxes).toContain("h.0–79 · module ×80");
    expect(v.items.length).toBeLessThanOrEqual(250);
    // opened, the fold is a frame holding the 80 layers as closed boxes
    const opened = new Set<Cluster>([...initialExpansion(m, h), fold]);
    const w = buildView(m, h, opened, measure);
    const f = w.frameOfCluster.get(fold.id)!;
    const inside = w.items.filter((it) => it.frame === f && it.cluster).map((it) => it.label);
    for (const name of ["h.0", "h.17", "h.79"]) expect(inside).toContain(name);
  });
  it("names blocks after the modules or ops they hold, never after their first node", () => {
    const m = gpt(300);
    const h = new Hierarchy(m, { maxChildren: 100 });
    const ranges = h.allClusters().filter((c) => c.kind === "range");
    expect(ranges.length).toBeGreaterThan(1);
    for (const r of ranges) expect(r.label).toMatch(/^h\.\d+ – h\.\d+$/);
    expect(shortModuleName("transformer.h.3")).toBe("h.3");
    expect(shortModuleName("encoder.attn")).toBe("attn");
    const root: Cluster = { id: "x", kind: "range", label: "", path: null, cls: null, repeat: null, parent: null, children: [1, 2, 3, 4], size: 4, depth: 0, order: 0 };
    expect(opMix(gpt(2), root)).toMatch(/×/);
  });
});

describe("compound layout", () => {
  it("puts every item inside its frame, frames inside their parents, siblings apart", () => {
    const m = gpt(6);
    const h = new Hierarchy(m);
    const all = new Set<Cluster>([h.root, ...h.allClusters()]);
    const v = buildView(m, h, all, measure, (t) => t.length * 7);
    expect(v.frames.length).toBeGreaterThan(5);
    const inp: LayoutInput = {
      w: Float64Array.from(v.items, (it) => it.w), h: Float64Array.from(v.items, (it) => it.h),
      src: Int32Array.from(v.edges, (e) => e.s), dst: Int32Array.from(v.edges, (e) => e.t),
      owner: Int32Array.from(v.items, (it) => it.frame), fparent: Int32Array.from(v.frames, (f) => f.parent),
      fminw: Float64Array.from(v.frames, (f) => f.minW),
    };
    const r = compoundLayout(inp);
    const box = (x: number, y: number, w: number, hh: number) => [x - w / 2, y - hh / 2, x + w / 2, y + hh / 2];
    const inside = (a: number[], b: number[]) => a[0] >= b[0] - 1e-6 && a[1] >= b[1] - 1e-6 && a[2] <= b[2] + 1e-6 && a[3] <= b[3] + 1e-6;
    const fb = (f: number) => box(r.fx![f], r.fy![f], r.fw![f], r.fh![f]);
    v.items.forEach((it, i) => {
      if (it.frame < 0) return;
      const b = box(r.x[i], r.y[i], inp.w[i], inp.h[i]);
      expect(inside(b, fb(it.frame))).toBe(true);
      // below the title bar
      expect(b[1]).toBeGreaterThanOrEqual(fb(it.frame)[1] + FRAME_TITLE_H + FRAME_PAD - 1e-6);
    });
    v.frames.forEach((f, k) => { if (f.parent >= 0) expect(inside(fb(k), fb(f.parent))).toBe(true); });
    // things in one container do not overlap
    const refs: number[][] = [];
    v.items.forEach((it, i) => refs.push([it.frame, ...box(r.x[i], r.y[i], inp.w[i], inp.h[i])]));
    v.frames.forEach((f, k) => refs.push([f.parent, ...fb(k)]));
    for (let a = 0; a < refs.length; a++) for (let b = a + 1; b < refs.length; b++) {
      if (refs[a][0] !== refs[b][0]) continue;
      const [, ax0, ay0, ax1, ay1] = refs[a], [, bx0, by0, bx1, by1] = refs[b];
      expect(ax0 < bx1 - 1e-6 && bx0 < ax1 - 1e-6 && ay0 < by1 - 1e-6 && by0 < ay1 - 1e-6).toBe(false);
    }
    // every edge runs from its source to its target
    for (let k = 0; k < inp.src.length; k++) {
      const p = r.pts.subarray(r.ptOff[k], r.ptOff[k + 1]);
      const s = inp.src[k], t = inp.dst[k];
      expect(Math.abs(p[0] - r.x[s])).toBeLessThanOrEqual(inp.w[s] / 2 + 1e-3);
      expect(Math.abs(p[p.length - 2] - r.x[t])).toBeLessThanOrEqual(inp.w[t] / 2 + 1e-3);
    }
  });

  it("routes an edge into a frame beside its nodes, not through them (ports)", () => {
    // a residual connection: the block's input feeds its first op and the sum at its bottom
    const nodes = [node(0, "SumBackward0", { module: "" }), node(1, "AddBackward0", { module: "blk" }),
      node(2, "MulBackward0", { module: "blk" }), node(3, "ExpBackward0", { module: "blk" }),
      node(4, "TanhBackward0", { module: "blk" }), node(5, "AccumulateGrad", { module: "" })];
    const edges: [number, number][] = [[1, 0], [2, 1], [3, 2], [4, 3], [5, 4], [5, 1]];
    const m = model(nodes, edges);
    const h = new Hierarchy(m, { minChain: 99, minFanIn: 99 });
    const v = buildView(m, h, new Set<Cluster>([h.root, ...h.allClusters()]), measure);
    expect(v.frames).toHaveLength(1);
    const r = compoundLayout({
      w: Float64Array.from(v.items, (it) => it.w), h: Float64Array.from(v.items, (it) => it.h),
      src: Int32Array.from(v.edges, (e) => e.s), dst: Int32Array.from(v.edges, (e) => e.t),
      owner: Int32Array.from(v.items, (it) => it.frame), fparent: Int32Array.from(v.frames, (f) => f.parent),
    });
    const k = v.edges.findIndex((e) => m.nodes[v.items[e.s].node].id === 5 && m.nodes[v.items[e.t].node].id === 1);
    const p = r.pts.subarray(r.ptOff[k], r.ptOff[k + 1]);
    expect(p.length).toBeGreaterThan(4); // bends inside the frame
    // walk the polyline: no point of it is inside another node's box
    for (let i = 0; i + 3 < p.length; i += 2) {
      for (let f = 0; f <= 20; f++) {
        const x = p[i] + (p[i + 2] - p[i]) * f / 20, y = p[i + 1] + (p[i + 3] - p[i + 1]) * f / 20;
        v.items.forEach((it, j) => {
          if (j === v.edges[k].s || j === v.edges[k].t) return;
          const inside = Math.abs(x - r.x[j]) < it.w / 2 - 1 && Math.abs(y - r.y[j]) < it.h / 2 - 1;
          expect(inside, `segment ${i / 2} crosses ${it.label}`).toBe(false);
        });
      }
    }
  });
});

