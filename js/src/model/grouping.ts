/**
 * Grouping: a hierarchy of clusters over the graph's nodes, and the "view" (what is drawn) for a set of expanded
 * clusters. This is what keeps 100k-node graphs usable: the layout and the renderer only see the view.
 *
 * Levels, outermost first:
 *   module  — nn.Module path (node.module, "a.b.c" nests in "a.b" in "a"); trivial levels are merged away. A
 *             parameter leaf without a module goes into the module its name says (`h.3.attn.c_attn.weight` →
 *             `h.3.attn.c_attn`), so a layer's weights sit inside the layer instead of in one row across the top.
 *             Module clusters carry their class name when the graph says it (meta.modules)
 *   repeat  — a run of sibling modules identical in class and op structure ("h.0–11 · GPT2Block ×12"), folded
 *             into one group that opens into the run (repeats.ts)
 *   chain   — maximal runs of nodes with exactly one input node and one output node, named after their ops; not
 *             made inside a small module, which opens flat
 *   fanin   — ≥ minFanIn siblings with the same op (or the same chain signature) whose only consumer is one node
 *   range   — when a cluster still has more than maxChildren children, they are cut into consecutive blocks
 *             (topological order), recursively, so expanding any one cluster adds a bounded number of items
 * Clusters are expanded lazily (click), like Model Explorer.
 */
import type { GraphModel } from "./graph";
import type { GraphNode } from "../schema/types";
import { mk, type Child, type Cluster, type ClusterKind } from "./cluster";
import { foldRepeats } from "./repeats";
import { blockLabel, flowKey, opsName, shortOp } from "./names";

export { clusterTitle, flowKey, opMix, opsName, shortModuleName, shortOp } from "./names";

export type { Child, Cluster, ClusterKind } from "./cluster";
export { mk } from "./cluster";

export interface GroupingOptions {
  minChain: number;
  minFanIn: number;
  maxChildren: number;
  /** identical sibling modules folded into one group from this many on */
  minRepeat: number;
  /** modules of at most this many ops open flat: no chain or fan-in groups inside them */
  flatUpTo: number;
}

export const DEFAULT_GROUPING: GroupingOptions = { minChain: 3, minFanIn: 4, maxChildren: 200, minRepeat: 3, flatUpTo: 60 };

export class Hierarchy {
  readonly root: Cluster;
  /** every cluster except the root, by id */
  readonly clusters = new Map<string, Cluster>();
  /** the innermost cluster holding each node */
  readonly parentOf: Cluster[];
  private readonly model: GraphModel;
  private splitSeq = 0;

  constructor(model: GraphModel, opts: Partial<GroupingOptions> = {}) {
    const o = { ...DEFAULT_GROUPING, ...opts };
    this.model = model;
    this.root = mk("root", "root", "all", null, null);
    this.parentOf = new Array(model.n);
    this.buildModules(model.doc.meta.modules ?? null);
    // a small graph opens flat: every op on screen says more than a fold of a few
    if (model.n > o.flatUpTo) foldRepeats(model, this.root, o.minRepeat);
    this.groupStructure(this.root, o);
    this.finish(this.root, 0, o);
  }

  // ---- construction -------------------------------------------------------------------------------------

  private buildModules(classes: Record<string, string> | null): void {
    const byPath = new Map<string, Cluster>();
    const get = (path: string): Cluster => {
      let c = byPath.get(path);
      if (c) return c;
      const dot = path.lastIndexOf(".");
      const parent = dot < 0 ? this.root : get(path.slice(0, dot));
      c = mk(`m:${path}`, "module", path, path, parent);
      c.cls = classes && Object.prototype.hasOwnProperty.call(classes, path) ? classes[path] : null;
      parent.children.push(c);
      byPath.set(path, c);
      return c;
    };
    const { nodes } = this.model;
    for (let i = 0; i < nodes.length; i++) {
      let m = moduleOf(nodes[i]);
      if (m && !nodes[i].module) {
        // a parameter placed by its name: a tied weight (GPT-2's lm_head.weight is also the token embedding) goes
        // up to the module holding every use of it, or its module and the other user would form a cycle
        for (const j of this.model.succsOf(i)) m = commonModule(m, nodes[j].module ?? "");
      }
      (m ? get(m) : this.root).children.push(i);
    }
    if (byPath.size) this.simplifyModules(this.root);
  }

  /** Dissolves modules holding < 2 nodes and merges a module whose only content is one sub-module. */
  private simplifyModules(c: Cluster): number {
    let size = 0;
    const out: Child[] = [];
    for (const ch of c.children) {
      if (typeof ch === "number") { out.push(ch); size++; continue; }
      let sub = ch;
      const s = this.simplifyModules(sub);
      size += s;
      if (s < 2) { for (const x of sub.children) { if (typeof x !== "number") x.parent = c; out.push(x); } continue; }
      while (sub.children.length === 1 && typeof sub.children[0] !== "number") sub = sub.children[0];
      sub.parent = c;
      out.push(sub);
    }
    c.children = out;
    c.size = size;
    return size;
  }

  /** Chains, then fan-ins, among the direct node children of each cluster (recursively). */
  private groupStructure(c: Cluster, o: GroupingOptions): void {
    for (const ch of c.children) if (typeof ch !== "number") this.groupStructure(ch, o);
    // a small module opens flat: its few ops say more than boxes named after runs of them
    if (c.kind === "module" && c.size <= o.flatUpTo) return;
    if (c.kind === "repeat") return;
    const m = this.model;
    const direct = new Set<number>();
    for (const ch of c.children) if (typeof ch === "number") direct.add(ch);
    if (direct.size < Math.min(o.minChain, o.minFanIn)) return;
    const chainable = (i: number) => m.inDegree(i) === 1 && m.outDegree(i) === 1 && direct.has(i);
    const linkedFromPrev = (i: number) => chainable(m.predsOf(i)[0]);

    const replaced = new Map<number, Cluster | null>(); // first node of a group → group; other members → null
    for (const i of direct) {
      if (!chainable(i) || linkedFromPrev(i)) continue;
      const run = [i];
      let cur = i;
      while (run.length <= direct.size) { // bound: malformed (cyclic) input must not hang the page
        const nx = m.succsOf(cur)[0];
        if (!chainable(nx) || nx === i) break;
        run.push(nx);
        cur = nx;
      }
      if (run.length < o.minChain) continue;
      const first = m.nodes[run[0]];
      const g = mk(`c:${first.id}`, "chain", opsName(m, run), null, c);
      g.children = run;
      run.forEach((x, k) => replaced.set(x, k === 0 ? g : null));
    }
    // fan-in: items (nodes or chains) with one consumer, same signature
    const buckets = new Map<string, Child[]>();
    const consider = (item: Child, target: number, sig: string) => {
      const key = `${target}\u0000${sig}`;
      const b = buckets.get(key);
      if (b) b.push(item); else buckets.set(key, [item]);
    };
    for (const i of direct) {
      const r = replaced.get(i);
      if (r === null) continue;
      if (r) {
        const last = r.children[r.children.length - 1] as number;
        if (m.outDegree(last) === 1) consider(r, m.succsOf(last)[0], chainSignature(m, r));
      } else if (m.outDegree(i) === 1) consider(i, m.succsOf(i)[0], m.nodes[i].op);
    }
    for (const [, items] of buckets) {
      if (items.length < o.minFanIn) continue;
      const head = items[0];
      const op = typeof head === "number" ? shortOp(m.nodes[head].op) : head.label;
      const firstId = typeof head === "number" ? m.nodes[head].id : head.id;
      const g = mk(`f:${firstId}`, "fanin", `${op} ×${items.length}`, null, c);
      g.children = items;
      items.forEach((it, k) => {
        if (typeof it === "number") replaced.set(it, k === 0 ? g : null);
        else { it.parent = g; replaced.set(it.children[0] as number, k === 0 ? g : null); }
      });
    }
    if (!replaced.size) return;
    const out: Child[] = [];
    for (const ch of c.children) {
      if (typeof ch !== "number") { out.push(ch); continue; }
      const r = replaced.get(ch);
      if (r === undefined) out.push(ch);
      else if (r) out.push(r);
    }
    c.children = out;
  }

  /** Sizes, depths, order, parentOf, block-splitting of oversized clusters, and the id index. */
  private finish(c: Cluster, depth: number, o: GroupingOptions): void {
    c.depth = depth;
    let size = 0;
    let order = Infinity;
    for (const ch of c.children) {
      if (typeof ch === "number") {
        this.parentOf[ch] = c;
        size++;
        order = Math.min(order, this.model.topo[ch]);
      } else {
        ch.parent = c;
        this.finish(ch, depth + 1, o);
        size += ch.size;
        order = Math.min(order, ch.order);
      }
    }
    c.size = size;
    c.order = order;
    if (c.kind !== "root") this.clusters.set(c.id, c);
    if (c.children.length > o.maxChildren) {
      this.split(c, o);
      for (const ch of c.children) if (typeof ch !== "number") this.finish(ch, depth + 1, o);
    }
  }

  private split(c: Cluster, o: GroupingOptions): void {
    // chains keep their own order (already a path); everything else goes in flow order
    const items = c.kind === "chain" ? c.children.slice() : this.flowOrder(c.children);
    const blocks = Math.ceil(items.length / o.maxChildren);
    const per = Math.ceil(items.length / blocks);
    const kind: ClusterKind = c.kind === "chain" || c.kind === "fanin" ? c.kind : "range";
    const out: Cluster[] = [];
    const tag = this.splitSeq++;
    for (let b = 0; b * per < items.length; b++) {
      const part = items.slice(b * per, (b + 1) * per);
      const g = mk(`${c.id}/${tag}.${b}`, kind, "", c.path, c);
      if (c.kind === "repeat") g.cls = c.cls;
      g.children = part;
      out.push(g);
    }
    c.children = out;
    for (const g of out) g.label = blockLabel(this.model, g, kind, c);
    if (out.length > o.maxChildren) this.split(c, o);
  }

  /**
   * The children in a topological order of the graph between them (Kahn's algorithm, ties and cycles resolved by
   * the earliest node inside), so consecutive blocks cut from it have edges going one way only.
   */
  private flowOrder(children: Child[]): Child[] {
    const m = this.model;
    const k = children.length;
    const owner = new Map<number, number>();
    const key = new Float64Array(k);
    children.forEach((ch, j) => {
      if (typeof ch === "number") { owner.set(ch, j); key[j] = flowKey(m, ch); } else { this.forEachMember(ch, (i) => owner.set(i, j)); key[j] = ch.order; }
    });
    const succ: number[][] = Array.from({ length: k }, () => []);
    const indeg = new Int32Array(k);
    for (const [i, j] of owner) {
      for (const t of m.succsOf(i)) {
        const j2 = owner.get(t);
        if (j2 !== undefined && j2 !== j) { succ[j].push(j2); indeg[j2]++; }
      }
    }
    const heap = new MinHeap(key);
    for (let j = 0; j < k; j++) if (indeg[j] === 0) heap.push(j);
    const done = new Uint8Array(k);
    const out: Child[] = [];
    const byKey = Array.from({ length: k }, (_, j) => j).sort((a, b) => key[a] - key[b]);
    let fallback = 0;
    while (out.length < k) {
      let j = heap.pop();
      if (j < 0) { // a cycle: take the earliest child not placed yet
        while (done[byKey[fallback]]) fallback++;
        j = byKey[fallback];
      }
      if (done[j]) continue;
      done[j] = 1;
      out.push(children[j]);
      for (const t of succ[j]) if (--indeg[t] === 0 && !done[t]) heap.push(t);
    }
    return out;
  }

  // ---- queries ------------------------------------------------------------------------------------------

  get grouped(): boolean {
    return this.clusters.size > 0;
  }

  /** Visits every node index inside c. */
  forEachMember(c: Cluster, fn: (i: number) => void): void {
    for (const ch of c.children) {
      if (typeof ch === "number") fn(ch);
      else this.forEachMember(ch, fn);
    }
  }

  /** Clusters enclosing node i, outermost first (root excluded). */
  ancestors(i: number): Cluster[] {
    const out: Cluster[] = [];
    for (let c: Cluster | null = this.parentOf[i]; c && c.kind !== "root"; c = c.parent) out.push(c);
    return out.reverse();
  }

  allClusters(): Cluster[] {
    return [...this.clusters.values()];
  }
}

/**
 * The module a node belongs in: its own `module`, or for a parameter leaf with none (autograd leaves are created
 * outside any forward call) the owner its dotted name says: `transformer.h.3.attn.c_attn.weight` →
 * `transformer.h.3.attn.c_attn`. A name without a dot (`x`) says nothing.
 */
export function moduleOf(n: GraphNode): string | null {
  if (n.module) return n.module;
  const name = n.kind === "leaf" ? n.tensor?.name : null;
  if (!name) return n.module;
  const dot = name.lastIndexOf(".");
  return dot > 0 ? name.slice(0, dot) : n.module;
}

/** The deepest module path both paths lie in ("" for the top level). */
export function commonModule(a: string, b: string): string {
  if (a === b || b.startsWith(`${a}.`)) return a;
  if (a.startsWith(`${b}.`)) return b;
  const pa = a.split("."), pb = b.split(".");
  let k = 0;
  while (k < pa.length && k < pb.length && pa[k] === pb[k]) k++;
  return pa.slice(0, k).join(".");
}


function chainSignature(m: GraphModel, c: Cluster): string {
  const ops = (c.children as number[]).map((i) => m.nodes[i].op);
  return ops.length <= 24 ? `chain:${ops.join(",")}` : `chain:${ops.length}:${ops[0]}:${ops[ops.length - 1]}`;
}

/** Binary min-heap of indices ordered by key[index]. */
class MinHeap {
  private a: number[] = [];
  constructor(private key: Float64Array) {}
  push(v: number): void {
    const a = this.a, key = this.key;
    a.push(v);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (key[a[p]] <= key[a[i]]) break;
      [a[p], a[i]] = [a[i], a[p]];
      i = p;
    }
  }
  /** -1 when empty */
  pop(): number {
    const a = this.a, key = this.key;
    if (!a.length) return -1;
    const top = a[0];
    const last = a.pop()!;
    if (a.length) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < a.length && key[a[l]] < key[a[m]]) m = l;
        if (r < a.length && key[a[r]] < key[a[m]]) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i], a[m]];
        i = m;
      }
    }
    return top;
  }
}
