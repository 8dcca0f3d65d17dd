/**
 * The view: the items (nodes and collapsed clusters), the frames (expanded clusters, drawn as titled boxes around
 * what they hold, as Model Explorer does) and the aggregated edges drawn for one expansion state.
 * Rebuilt in O(nodes + edges) on every expand/collapse.
 */
import type { GraphModel } from "./graph";
import { clusterTitle, shortModuleName, type Cluster, type Hierarchy } from "./grouping";
import { boxOp } from "./names";
import { shortShape, formatCount } from "./format";
import { FRAME_PAD, NODE_SEP, RANK_SEP } from "../layout/types";

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
  /** the innermost frame holding this item, or -1 (top level) */
  frame: number;
}

/** An expanded cluster, drawn as a titled frame around its contents; a click on the title collapses it. */
export interface ViewFrame {
  cluster: Cluster;
  /** enclosing frame, or -1; a parent always comes before its children in `frames` */
  parent: number;
  /** 1 for a top-level frame */
  depth: number;
  title: string;
  /** the width the title needs */
  minW: number;
  /** centre and size, set by the layout */
  x: number;
  y: number;
  w: number;
  h: number;
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
  frames: ViewFrame[];
  frameOfCluster: Map<string, number>;
}


/** How a cluster is named where its parent is drawn (as a frame or not): relative to the enclosing module. */
export function groupTitle(c: Cluster): string {
  if (c.kind !== "module" || !c.path) return c.label;
  const rel = clusterTitle(c);
  return /^\d+$/.test(rel) ? shortModuleName(c.path) : rel;
}

/**
 * What a group is, as its box's first line and its frame's title say it: the name and, for a module, its class
 * ("attn · CausalSelfAttention"); for a fold, the run and how many ("h.0–11 · GPT2Block ×12"). Never a histogram
 * of ops when a module name is known.
 */
export function groupName(c: Cluster): string {
  const name = groupTitle(c);
  if (c.kind === "repeat" && c.repeat) return `${name} · ${c.cls ?? "module"} ×${c.repeat.count}`;
  return c.cls ? `${name} · ${c.cls}` : name;
}

/** The size part of a group's second line and frame title: "43 ops", or "62 ops each" for a fold. */
export function groupSize(c: Cluster): string {
  return c.kind === "repeat" && c.repeat ? `${formatCount(c.repeat.each)} ops each` : `${formatCount(c.size)} ops`;
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

/**
 * `frameless`: open clusters drawn without a frame, their contents as if they were their parent's (chains and
 * fan-ins opened wholesale, in a small graph or by Expand all: they are not the model's structure, and a frame
 * around every run of three ops is noise; one the user opened gets its frame, to close it again).
 */
export function buildView(model: GraphModel, h: Hierarchy, expanded: Set<Cluster>, measure: Measure,
  titleWidth: (title: string) => number = (t) => t.length * 7, frameless: (c: Cluster) => boolean = () => false): ViewGraph {
  const items: ViewItem[] = [];
  const frames: ViewFrame[] = [];
  const rep = new Int32Array(model.n).fill(-1);
  const itemOfCluster = new Map<string, number>();
  const frameOfCluster = new Map<string, number>();
  const visit = (c: Cluster, frame: number, depth: number) => {
    for (const ch of c.children) {
      if (typeof ch === "number") {
        rep[ch] = items.length;
        const label = model.nodes[ch].op;
        const sublabel = nodeSublabel(model, ch);
        // drawn without the "Backward0" every op has, long names shortened (the tooltip and the Inspector give the
        // full name)
        items.push({ node: ch, cluster: null, label, sublabel, ...measure(boxOp(label), sublabel, false), x: 0, y: 0, frame });
      } else if (expanded.has(ch) && frameless(ch)) {
        visit(ch, frame, depth);
      } else if (expanded.has(ch)) {
        const f = frames.length;
        const title = `${groupName(ch)} · ${groupSize(ch)}`;
        frames.push({ cluster: ch, parent: frame, depth: depth + 1, title, minW: titleWidth(title) + 2 * FRAME_PAD + 16, x: 0, y: 0, w: 0, h: 0 });
        frameOfCluster.set(ch.id, f);
        visit(ch, f, depth + 1);
      } else {
        const idx = items.length;
        itemOfCluster.set(ch.id, idx);
        h.forEachMember(ch, (i) => { rep[i] = idx; });
        // named relative to the enclosing module, which is drawn as a frame around it when open; at the top level
        // (nothing open around it) that is its full path
        const label = groupName(ch);
        const sublabel = groupSize(ch);
        // room for the cost the pane adds to the second line ("49 ops · 539 KiB")
        const m = measure(label, `${sublabel} · 000.0 KiB`, true, ch.kind === "module" && !ch.cls);
        items.push({ node: -1, cluster: ch, label, sublabel, ...m, ds: sublabel, x: 0, y: 0, frame });
      }
    }
  };
  visit(h.root, -1, 0);
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
  return { items, edges, rep, itemOfCluster, frames, frameOfCluster };
}

/**
 * The area the drawn boxes of an expansion need (each with half the spacing around it), without building the view:
 * a cheap lower bound of what its layout will take, visiting only what would be drawn.
 */
export function viewArea(model: GraphModel, expanded: Set<Cluster>, root: Cluster, measure: Measure): number {
  let area = 0;
  const add = (m: { w: number; h: number }) => { area += (m.w + NODE_SEP / 2) * (m.h + RANK_SEP / 2); };
  const visit = (c: Cluster) => {
    for (const ch of c.children) {
      if (typeof ch === "number") add(measure(boxOp(model.nodes[ch].op), nodeSublabel(model, ch), false));
      else if (expanded.has(ch)) visit(ch);
      else add(measure(groupName(ch), `${groupSize(ch)} · 000.0 KiB`, true, ch.kind === "module" && !ch.cls));
    }
  };
  visit(root);
  return area;
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
  /** graphs with at most this many nodes may open fully expanded */
  fullUpTo: number;
  /** ... and so may graphs up to this size without any module path: there is no model structure to open level by
   * level, only chains and blocks */
  fullWithoutModulesUpTo: number;
  /** otherwise module and block clusters are opened a whole level at a time while the view stays under this many
   * items; chain, fan-in and fold groups stay closed until clicked */
  budget: number;
}
export const DEFAULT_POLICY: ExpandPolicy = { fullUpTo: 300, fullWithoutModulesUpTo: 2000, budget: 250 };

/**
 * The ways the graph can open, from the most folded to the most open: the top level; then one whole level of
 * modules and blocks more at a time while the view stays under the budget; then, for a small graph, everything.
 * The pane opens the most open one that still fits on screen legibly (canvas/layouter.ts).
 */
export function expansionLevels(model: GraphModel, h: Hierarchy, policy: Partial<ExpandPolicy> = {}): Set<Cluster>[] {
  const p = { ...DEFAULT_POLICY, ...policy };
  const out: Set<Cluster>[] = [];
  const expanded = new Set<Cluster>([h.root]);
  out.push(new Set(expanded));
  // Level by level, all or nothing: a level opened only in part would show some modules in detail and their
  // siblings as boxes, which reads as a difference between them that is not there.
  let visible = h.root.children.length;
  let level = h.root.children.filter((c): c is Cluster => typeof c !== "number");
  while (level.length) {
    // a chain, fan-in or fold already is the summary: opening it only adds a long row of look-alike boxes
    const open = level.filter((c) => c.kind === "module" || c.kind === "range");
    const delta = open.reduce((a, c) => a + c.children.length - 1, 0);
    if (!open.length || visible + delta > p.budget) break;
    visible += delta;
    const next: Cluster[] = [];
    for (const c of open) {
      expanded.add(c);
      for (const ch of c.children) if (typeof ch !== "number") next.push(ch);
    }
    out.push(new Set(expanded));
    level = next;
  }
  const modules = h.allClusters().some((c) => c.kind === "module");
  if (model.n <= p.fullUpTo || (!modules && model.n <= p.fullWithoutModulesUpTo)) {
    const all = new Set<Cluster>([h.root, ...h.allClusters()]);
    if (all.size > out[out.length - 1].size) out.push(all);
  }
  return out;
}

/** The most open of the expansion levels (what opens when the pane's size is not known). */
export function initialExpansion(model: GraphModel, h: Hierarchy, policy: Partial<ExpandPolicy> = {}): Set<Cluster> {
  const levels = expansionLevels(model, h, policy);
  return levels[levels.length - 1];
}
