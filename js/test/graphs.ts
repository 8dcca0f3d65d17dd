/** Small schema-form graphs for unit tests. */
import type { GraphDoc, GraphNode } from "../src/schema/types";
import { normaliseGraph } from "../src/model/decode";
import { GraphModel } from "../src/model/graph";

export function node(id: number, op: string, extra: Partial<GraphNode> = {}): Partial<GraphNode> {
  return { id, op, kind: op === "AccumulateGrad" ? "leaf" : "backward", saved: [], attrs: {}, saved_bytes: 0, ...extra };
}

export function doc(nodes: Partial<GraphNode>[], edges: [number, number][], meta: Record<string, unknown> = {}): GraphDoc {
  return normaliseGraph({
    format: "graphwidget", version: 1, meta: { roots: [0], traced: false, timed: false, ...meta }, nodes,
    edges: edges.map(([s, t], k) => ({ source: s, target: t, output: 0, slot: k, shape: [2, 3], dtype: "float32" })),
  });
}

export function model(nodes: Partial<GraphNode>[], edges: [number, number][]): GraphModel {
  return new GraphModel(doc(nodes, edges));
}

/** root 0 ← 1 ← … ← n-1 (leaf) */
export function chain(n: number): GraphModel {
  const nodes = Array.from({ length: n }, (_, i) => node(i, i === n - 1 ? "AccumulateGrad" : "MulBackward0"));
  const edges: [number, number][] = [];
  for (let i = 1; i < n; i++) edges.push([i, i - 1]);
  return model(nodes, edges);
}

/** k leaves → node 0 */
export function fanin(k: number): GraphModel {
  const nodes = [node(0, "StackBackward0"), ...Array.from({ length: k }, (_, i) => node(i + 1, "AccumulateGrad"))];
  return model(nodes, Array.from({ length: k }, (_, i) => [i + 1, 0] as [number, number]));
}

/** deterministic pseudo-random DAG: node k takes 1–3 inputs among the previous `window` */
export function randomDag(n: number, seed = 1, window = 8): GraphModel {
  let s = seed;
  const rnd = () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648);
  const nodes = Array.from({ length: n }, (_, i) => node(i, i < 3 ? "AccumulateGrad" : "AddBackward0"));
  const edges: [number, number][] = [];
  for (let k = 3; k < n; k++) {
    const ins = new Set<number>();
    const c = 1 + Math.floor(rnd() * 3);
    for (let j = 0; j < c; j++) ins.add(Math.max(0, k - 1 - Math.floor(rnd() * window)));
    for (const i of ins) edges.push([i, k]);
  }
  return model(nodes, edges);
}
