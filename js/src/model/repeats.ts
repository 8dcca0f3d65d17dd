/**
 * Folding repeated modules: a run of sibling modules that are identical in class and op structure (the 12 blocks
 * of a transformer, the 5 identical blocks of a ResNet stage) becomes one group, "h.0–11 · GPT2Block ×12", that
 * opens into the run. As TorchLens' fold_repeats, ×N is only ever said of modules that really are the same: the
 * same class (when the graph names classes), the same ops in the same order, wired the same way, with the same
 * sub-modules at the same relative paths. Anything else stays unfolded.
 */
import type { GraphModel } from "./graph";
import { mk, type Child, type Cluster } from "./cluster";
import { shortModuleName } from "./names";

/** Folds runs of at least `min` identical sibling modules, everywhere below `root` (in place). */
export function foldRepeats(model: GraphModel, root: Cluster, min: number): void {
  visit(model, root, min);
}

function visit(model: GraphModel, c: Cluster, min: number): void {
  for (let k = 0; k < c.children.length; k++) {
    const ch = c.children[k];
    if (typeof ch === "number" || ch.kind !== "module") continue;
    visit(model, ch, min);
    // a module left holding nothing but one fold is that fold (a ModuleList of identical blocks)
    if (ch.children.length === 1 && typeof ch.children[0] !== "number" && ch.children[0].kind === "repeat") {
      const r = ch.children[0];
      r.parent = c;
      r.path = ch.path;
      c.children[k] = r;
    }
  }
  const mods = c.children.filter((x): x is Cluster => typeof x !== "number" && x.kind === "module");
  if (mods.length < min) return;
  // in flow order: by each module's output, the last of its nodes in a topological order (its first node may be a
  // weight the order visits early)
  const end = new Map<Cluster, number>();
  for (const x of mods) end.set(x, lastTopo(model, x));
  mods.sort((a, b) => end.get(a)! - end.get(b)!);
  const sig = new Map<Cluster, string>();
  const sigOf = (x: Cluster) => {
    let s = sig.get(x);
    if (s === undefined) { s = signature(model, x); sig.set(x, s); }
    return s;
  };
  // runs of the same class and size first (cheap), then, only inside those long enough, of the same signature
  const runs: Cluster[][] = [];
  const cut = (xs: Cluster[], same: (a: Cluster, b: Cluster) => boolean, each: (run: Cluster[]) => void) => {
    let run: Cluster[] = [];
    for (const x of xs) {
      if (run.length && same(run[run.length - 1], x)) run.push(x);
      else { if (run.length >= min) each(run); run = [x]; }
    }
    if (run.length >= min) each(run);
  };
  cut(mods, (a, b) => a.cls === b.cls && a.size === b.size, (r) => cut(r, (a, b) => sigOf(a) === sigOf(b), (q) => runs.push(q)));
  if (!runs.length) return;
  const folded = new Map<Child, Cluster | null>(); // first member → its fold; the other members → null
  for (const r of runs) {
    const g = mk(`r:${r[0].path}`, "repeat", spanName(r.map((x) => x.path!)), null, c);
    g.cls = r[0].cls;
    g.repeat = { count: r.length, each: r[0].size };
    g.children = r;
    g.size = r.reduce((a, x) => a + x.size, 0);
    r.forEach((x, j) => { x.parent = g; folded.set(x, j === 0 ? g : null); });
  }
  const out: Child[] = [];
  for (const x of c.children) {
    const f = folded.get(x);
    if (f === undefined) out.push(x);
    else if (f) out.push(f);
  }
  c.children = out;
}

function lastTopo(model: GraphModel, c: Cluster): number {
  let t = -Infinity;
  const walk = (x: Cluster) => { for (const ch of x.children) if (typeof ch === "number") t = Math.max(t, model.topo[ch]); else walk(ch); };
  walk(c);
  return t;
}

/**
 * What a module is, without its name: every node in flow order as (relative module path and class, op, inputs
 * as positions within the module or "outside"). Two modules with the same signature compute the same thing the
 * same way.
 */
export function signature(model: GraphModel, c: Cluster): string {
  const where = new Map<number, string>();
  const base = c.path ? c.path.length + 1 : 0;
  const walk = (x: Cluster, rel: string) => {
    for (const ch of x.children) {
      if (typeof ch === "number") where.set(ch, rel);
      else walk(ch, ch.kind === "module" && ch.path ? `${ch.path.slice(base)}:${ch.cls ?? ""}` : rel);
    }
  };
  walk(c, "");
  const members = [...where.keys()].sort((a, b) => model.topo[a] - model.topo[b]);
  const local = new Map<number, number>();
  members.forEach((i, k) => local.set(i, k));
  const parts: string[] = [];
  for (const i of members) {
    const ins = Array.from(model.predsOf(i), (p) => local.get(p) ?? -1);
    parts.push(`${where.get(i)}|${model.nodes[i].op}|${ins.join(",")}`);
  }
  return parts.join(";");
}

/** "h.0–11" for h.0 … h.11; "conv_a – conv_d" when the names are not numbered in a row. */
export function spanName(paths: string[]): string {
  const a = paths[0], b = paths[paths.length - 1];
  const num = /^(.*)\.(\d+)$/;
  const ma = num.exec(a), mb = num.exec(b);
  if (ma && mb && ma[1] === mb[1]) return `${shortModuleName(a)}–${mb[2]}`;
  return `${shortModuleName(a)} – ${shortModuleName(b)}`;
}
