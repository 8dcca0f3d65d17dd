/** Search over the fields a user knows a node by: op, module path, source location and code line. */
import type { GraphModel } from "./graph";

export const SEARCH_FIELDS = ["op", "module", "source", "code"] as const;

/** Lower-cased fields per node, built on the first search: typing then costs one scan, not 4n toLowerCase calls. */
const haystacks = new WeakMap<GraphModel, string[]>();

function haystack(model: GraphModel): string[] {
  let h = haystacks.get(model);
  if (!h) {
    // \u0001 cannot occur in a query typed into a text box, so a match never spans two fields
    h = model.nodes.map((n) => SEARCH_FIELDS.map((f) => n[f] ?? "").join("\u0001").toLowerCase());
    haystacks.set(model, h);
  }
  return h;
}

/** Node indices matching `query` (case-insensitive substring), in flow order (top of the drawing first). */
export function searchNodes(model: GraphModel, query: string): number[] {
  const q = query.trim().toLowerCase();
  if (!q) return [];
  const out: number[] = [];
  const hs = haystack(model);
  for (let i = 0; i < model.n; i++) if (hs[i].includes(q)) out.push(i);
  out.sort((a, b) => model.topo[a] - model.topo[b]);
  return out;
}

export function maskOf(n: number, hits: number[]): Uint8Array {
  const m = new Uint8Array(n);
  for (const i of hits) m[i] = 1;
  return m;
}
