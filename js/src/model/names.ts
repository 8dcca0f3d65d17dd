/**
 * What groups are called: a chain after its ops, a block after the modules (or the parameters' modules, or the
 * ops) it holds, a module relative to the module around it. Never after a first node, and never by a histogram of
 * ops when a module name is known.
 */
import type { GraphModel } from "./graph";
import type { Child, Cluster, ClusterKind } from "./grouping";

/**
 * Where a node comes in the flow, for cutting blocks: its topological position, or for an input (a weight) just
 * before its first consumer, which a depth-first order may be far from (a last layer's bias is visited first).
 */
export function flowKey(m: GraphModel, i: number): number {
  if (m.inDegree(i) > 0) return m.topo[i];
  let k = Infinity;
  for (const j of m.succsOf(i)) k = Math.min(k, m.topo[j]);
  return Number.isFinite(k) ? k - 0.5 : m.topo[i];
}

/**
 * A chain is named after what it does: its ops in flow order ("Softmax · MaskedFill · Div"), each once, or
 * "Mul ×8" when it is one op repeated.
 */
export function opsName(m: GraphModel, run: Child[]): string {
  const ops: string[] = [];
  let n = 0;
  // a split chain holds blocks of blocks: its ops are read in order, up to the first few distinct ones
  const visit = (xs: Child[]) => {
    for (const x of xs) {
      if (typeof x !== "number") { visit(x.children); continue; }
      n++;
      const op = shortOp(m.nodes[x].op);
      if (ops.length <= 3 && !ops.includes(op)) ops.push(op);
    }
  };
  visit(run);
  if (ops.length === 1) return `${ops[0]} ×${n}`;
  return ops.length > 3 ? `${ops.slice(0, 3).join(" · ")} · …` : ops.join(" · ");
}

/**
 * A block is named after what it holds, never after its first node: the range of modules it spans
 * ("h.0 – h.11") when it holds modules, else its op mix ("View ×30 · Addmm ×12 · Mul ×8").
 */
export function blockLabel(m: GraphModel, g: Cluster, kind: ClusterKind, parent: Cluster): string {
  const count = (x: Child): number => (typeof x === "number" ? 1 : x.children.reduce((a: number, y) => a + count(y), 0));
  const n = count(g);
  if (kind === "chain") return opsName(m, g.children);
  if (kind === "fanin") return `${parent.label.replace(/ ×\d+$/, "")} ×${g.children.length}`;
  const mods = g.children.filter((c): c is Cluster => typeof c !== "number" && (c.kind === "module" || c.kind === "repeat"));
  if (mods.length) {
    const name = (c: Cluster) => (c.kind === "repeat" ? c.label : shortModuleName(c.path!));
    const a = name(mods[0]), b = name(mods[mods.length - 1]);
    return mods.length === 1 ? a : `${a} – ${b}`;
  }
  // a plain capture knows its parameters' names: the modules they belong to say where the block is in the model
  const named = namedLeaves(m) ? paramSpan(m, g) : null;
  if (named) return named;
  // no module at all (a function, a Python loop): the lines that made the nodes say where, the commonest op what
  const lines = sourceSpan(m, g);
  return lines ? `${lines} · ${opMix(m, g, 1).replace(/ · …$/, "")}` : opMix(m, g);
}

/**
 * "train.py:12–14": the file most of a block's nodes were made in (its name, not its folders) and the range of
 * their lines there, "+" when some came from other files; null when no node knows its line.
 */
export function sourceSpan(m: GraphModel, g: Cluster): string | null {
  const files = new Map<string, { n: number; lo: number; hi: number }>();
  const visit = (x: Cluster) => {
    for (const ch of x.children) {
      if (typeof ch !== "number") { visit(ch); continue; }
      const src = m.nodes[ch].source;
      if (!src) continue;
      const at = src.lastIndexOf(":");
      const line = at > 0 ? Number(src.slice(at + 1)) : NaN;
      if (!Number.isFinite(line)) continue;
      const file = src.slice(0, at).replace(/^.*[\\/]/, "");
      const f = files.get(file);
      if (f) { f.n++; f.lo = Math.min(f.lo, line); f.hi = Math.max(f.hi, line); } else files.set(file, { n: 1, lo: line, hi: line });
    }
  };
  visit(g);
  let best: [string, { n: number; lo: number; hi: number }] | null = null;
  for (const e of files) if (!best || e[1].n > best[1].n) best = e;
  if (!best) return null;
  const [file, { lo, hi }] = best;
  return `${file}:${lo === hi ? lo : `${lo}–${hi}`}${files.size > 1 ? " +" : ""}`;
}

const named = new WeakMap<GraphModel, boolean>();

/** Whether any leaf of the graph has a dotted name (a parameter of a module): computed once per graph. */
function namedLeaves(m: GraphModel): boolean {
  let v = named.get(m);
  if (v === undefined) {
    v = m.nodes.some((n) => n.kind === "leaf" && !!n.tensor?.name && n.tensor.name.indexOf(".") > 0);
    named.set(m, v);
  }
  return v;
}

/** "conv1 – layer2.0": the modules of the first and last named parameters in a block (flow order), or null. */
function paramSpan(m: GraphModel, g: Cluster): string | null {
  let first: [number, string] | null = null, last: [number, string] | null = null;
  const visit = (x: Cluster) => {
    for (const ch of x.children) {
      if (typeof ch !== "number") { visit(ch); continue; }
      const name = m.nodes[ch].kind === "leaf" ? m.nodes[ch].tensor?.name : null;
      const dot = name ? name.lastIndexOf(".") : -1;
      if (!name || dot <= 0) continue;
      const mod = topTwo(name.slice(0, dot));
      const t = flowKey(m, ch);
      if (!first || t < first[0]) first = [t, mod];
      if (!last || t > last[0]) last = [t, mod];
    }
  };
  visit(g);
  if (!first || !last) return null;
  const [a, b] = [(first as [number, string])[1], (last as [number, string])[1]];
  return a === b ? a : `${a} – ${b}`;
}

/** The first two parts of a module path ("layer2.0.conv1" → "layer2.0"): where in the model, not which layer. */
function topTwo(path: string): string {
  return path.split(".").slice(0, 2).join(".");
}

/** The three commonest ops inside a cluster, "View ×30 · Addmm ×12 · Mul ×8" ("Backward0" dropped). */
export function opMix(m: GraphModel, c: Cluster, top = 3): string {
  const counts = new Map<string, number>();
  const visit = (x: Cluster) => {
    for (const ch of x.children) {
      if (typeof ch === "number") { const op = shortOp(m.nodes[ch].op); counts.set(op, (counts.get(op) ?? 0) + 1); } else visit(ch);
    }
  };
  visit(c);
  const best = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const parts = best.slice(0, top).map(([op, k]) => `${op} ×${k}`);
  return best.length > top ? `${parts.join(" · ")} · …` : parts.join(" · ");
}

/** The end of a module path that tells siblings apart: "transformer.h.3" → "h.3", "encoder.attn" → "attn". */
export function shortModuleName(path: string): string {
  const parts = path.split(".");
  const last = parts[parts.length - 1];
  return /^\d+$/.test(last) && parts.length > 1 ? `${parts[parts.length - 2]}.${last}` : last;
}

/** "AddmmBackward0" → "Addmm": the suffix is on every op and says nothing. */
export function shortOp(op: string): string {
  return op.replace(/Backward\d*$/, "") || op;
}

/**
 * Long op names shortened where a node's box draws them (the tooltip, the Inspector and search keep the full
 * name): a box of a notebook's pane has room for a word or two, and "ScaledDotProductEfficientAttention" cut to
 * its first letters names nothing.
 */
const BOX_OPS: Record<string, string> = {
  AccumulateGrad: "AccGrad",
  Convolution: "Conv",
  ConvolutionBackwardBackward: "ConvBack",
  NativeLayerNorm: "LayerNorm",
  NativeBatchNorm: "BatchNorm",
  CudnnBatchNorm: "BatchNorm",
  NativeGroupNorm: "GroupNorm",
  ScaledDotProductAttention: "SDPA",
  ScaledDotProductEfficientAttention: "SDPA eff",
  ScaledDotProductFlashAttention: "SDPA flash",
  ScaledDotProductFlashAttentionForCpu: "SDPA flash",
  ScaledDotProductCudnnAttention: "SDPA cudnn",
  GridSampler2D: "GridSample",
  GridSampler2DCpuFallback: "GridSample",
  MaxPool2DWithIndices: "MaxPool2d",
  MaxPool3DWithIndices: "MaxPool3d",
  AdaptiveAvgPool2D: "AdaptAvgPool",
  AdaptiveMaxPool2D: "AdaptMaxPool",
  UpsampleBilinear2D: "Bilinear2d",
  UpsampleNearest2D: "Nearest2d",
  LinalgVectorNorm: "VectorNorm",
  EmbeddingBag: "EmbedBag",
};

/** What a node's box says: its op without "Backward0", long names shortened (BOX_OPS). */
export function boxOp(op: string): string {
  const short = shortOp(op);
  return BOX_OPS[short] ?? short;
}

/** Module clusters show their path relative to the enclosing module. */
export function clusterTitle(c: Cluster): string {
  if (c.kind !== "module" || !c.path) return c.label;
  let p: Cluster | null = c.parent;
  while (p && p.kind !== "module" && p.kind !== "root") p = p.parent;
  if (p && p.kind === "module" && p.path && c.path.startsWith(`${p.path}.`)) return c.path.slice(p.path.length + 1);
  return c.path;
}

