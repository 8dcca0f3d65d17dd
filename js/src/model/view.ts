/**
 * The view: the items (nodes and collapsed clusters) and aggregated edges drawn for one expansion state.
 * Rebuilt in O(nodes + edges) on every expand/collapse.
 */
import type { GraphModel } from "./graph";
import { clusterTitle, type Cluster, type Hierarchy } from "./grouping";
import { shortShape, formatCount } from "./format";

export interface ViewItem {
  /** graph node index, or -1 for a collapsed cluster */
  node: number;
  cluster: Cluster | null;
  label: string;
  sublabel: string;
  /** the label and sub-label as drawn (truncated to the box) */
  dl: string;
  ds: string;
  w: number;
  h: number;
  /** centre, set by the layout */
  x: number;
  y: number;
}

export interface ViewEdge {
  s: number;
  t: number;
  /** how many graph edges this drawn edge stands for */
  count: number;
  /** index (in model.edges) of one of them: its tensor is shown on hover */
  edge: number;
  /** polyline in world coordinates, source → target (x0,y0,x1,y1,...) */
  points: Float32Array | null;
}

export interface ViewGraph {
  items: ViewItem[];
  edges: ViewEdge[];
  /** node index → index of the item that shows it */
  rep: Int32Array;
  itemOfCluster: Map<string, number>;
}

export type Measure = (label: string, sublabel: string, group: boolean, cutLeft?: boolean) => { w: number; h: number; dl: string; ds: string };

export function nodeSublabel(model: GraphModel, i: number): string {
  const n = model.nodes[i];
  if (n.kind === "leaf" && n.tensor) {
    const sh = shortShape(n.tensor.shape ?? null, n.tensor.dtype ?? null);
    return n.tensor.name ? `${n.tensor.name} ${sh}`.trim() : sh;
  }
  const o = n.outputs && n.outputs[0];
  return o ? shortShape(o.shape, o.dtype) : "";
}

export function buildView(model: GraphModel, h: Hierarchy, expanded: Set<Cluster>, measure: Measure): ViewGraph {
  const items: ViewItem[] = [];
  const rep = new Int32Array(model.n).fill(-1);
  const itemOfCluster = new Map<string, number>();
  const visit = (c: Cluster) => {
    for (const ch of c.children) {
      if (typeof ch === "number") {
        rep[ch] = items.length;
        const label = model.nodes[ch].op;
        const sublabel = nodeSublabel(model, ch);
        items.push({ node: ch, cluster: null, label, sublabel, ...measure(label, sublabel, false), x: 0, y: 0 });
      } else if (expanded.has(ch)) {
        visit(ch);
      } else {
        const idx = items.length;
        itemOfCluster.set(ch.id, idx);
        h.forEachMember(ch, (i) => { rep[i] = idx; });
        // module boxes carry their full path: the enclosing modules are open, hence not drawn, so a relative
        // name ("attn") would not say which layer it is
        const label = ch.kind === "module" && ch.path ? ch.path : clusterTitle(ch);
        const sublabel = `${ch.kind === "module" ? "module · " : ""}${formatCount(ch.size)} ops`;
        items.push({ node: -1, cluster: ch, label, sublabel, ...measure(label, sublabel, true, ch.kind === "module"), x: 0, y: 0 });
      }
    }
  };
  visit(h.root);
  const edges: ViewEdge[] = [];
  const byPair = new Map<number, number>();
  const m = items.length;
  for (let k = 0; k < model.eSrc.length; k++) {
    const a = rep[model.eSrc[k]];
    const b = rep[model.eDst[k]];
    if (a === b || a < 0 || b < 0) continue;
    const key = a * m + b;
    const e = byPair.get(key);
    if (e === undefined) {
      byPair.set(key, edges.length);
      edges.push({ s: a, t: b, count: 1, edge: k, points: null });
    } else edges[e].count++;
  }
  return { items, edges, rep, itemOfCluster };
}

/** Per drawn item: the sum of `values` over the nodes it shows (NaN where none has a value). */
export function sumByItem(rep: Int32Array, items: number, values: ArrayLike<number>): Float64Array {
  const sums = new Float64Array(items).fill(NaN);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (!Number.isFinite(v)) continue;
    const r = rep[i];
    if (r < 0) continue;
    sums[r] = Number.isNaN(sums[r]) ? v : sums[r] + v;
  }
  return sums;
}

export interface ExpandPolicy {
  /** graphs with at most this many nodes open fully expanded (no grouping visible) */
  fullUpTo: number;
  /** otherwise module and block clusters are opened a whole level at a time while the view stays under this many
   * items; chain and fan-in groups stay closed until clicked */
  budget: number;
}
export const DEFAULT_POLICY: ExpandPolicy = { fullUpTo: 2000, budget: 600 };

export function initialExpansion(model: GraphModel, h: Hierarchy, p: ExpandPolicy = DEFAULT_POLICY): Set<Cluster> {
  const expanded = new Set<Cluster>([h.root]);
  if (model.n <= p.fullUpTo) {
    for (const c of h.allClusters()) expanded.add(c);
    return expanded;
  }
  // Level by level, all or nothing: a level opened only in part would show some modules in detail and their
  // siblings as boxes, which reads as a difference between them that is not there.
  let visible = h.root.children.length;
  let level = h.root.children.filter((c): c is Cluster => typeof c !== "number");
  while (level.length) {
    // a chain or fan-in group already is the summary: opening it only adds a long row of look-alike boxes
    const open = level.filter((c) => c.kind !== "chain" && c.kind !== "fanin");
    const delta = open.reduce((a, c) => a + c.children.length - 1, 0);
    if (!open.length || visible + delta > p.budget) break;
    visible += delta;
    const next: Cluster[] = [];
    for (const c of open) {
      expanded.add(c);
      for (const ch of c.children) if (typeof ch !== "number") next.push(ch);
    }
    level = next;
  }
  return expanded;
}
