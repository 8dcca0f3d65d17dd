/**
 * How the Inspector shows a "path:line" source: a library file relative to the site-packages (or dist-packages)
 * folder it was installed into, any other file relative to the folder all of the graph's own sources share. The full
 * path stays available (as the element's title): only the shown text is shortened.
 */
import type { GraphModel } from "./graph";

const INSTALLED = /^.*[\\/](?:site|dist)-packages[\\/]/;

/** `…/site-packages/transformers/models/gpt2/modeling_gpt2.py:88` → `transformers/models/gpt2/modeling_gpt2.py:88`;
 * null when the path is not inside an installed-packages folder. */
export function packageRelative(source: string): string | null {
  const m = INSTALLED.exec(source);
  return m && m[0].length < source.length ? source.slice(m[0].length) : null;
}

/** The folder (ending in / or \) every given source lies in, or "" when they share none below the file system's root. */
export function sharedFolder(sources: Iterable<string | null | undefined>): string {
  let root: string | null = null;
  for (const s of sources) {
    if (!s) continue;
    const path = s.replace(/:\d+$/, "");
    const cut = Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\"));
    const dir = cut >= 0 ? path.slice(0, cut + 1) : "";
    if (root === null) { root = dir; continue; }
    let k = 0;
    while (k < root.length && k < dir.length && root[k] === dir[k]) k++;
    root = root.slice(0, k);
    const c = Math.max(root.lastIndexOf("/"), root.lastIndexOf("\\"));
    root = c >= 0 ? root.slice(0, c + 1) : "";
    if (!root) return "";
  }
  // "/" or "C:\" alone shortens nothing worth saying
  return root && !/^(?:[A-Za-z]:)?[\\/]$/.test(root) ? root : "";
}

const ROOTS = new WeakMap<GraphModel, string>();

/** The shared folder of a graph's sources outside installed packages (computed once per graph). */
export function ownRoot(model: GraphModel): string {
  let root = ROOTS.get(model);
  if (root === undefined) {
    const own = function* () {
      for (const n of model.nodes) if (n.source && packageRelative(n.source) === null) yield n.source;
    };
    root = sharedFolder(own());
    ROOTS.set(model, root);
  }
  return root;
}

/** The shown form of one source of `model`: package-relative, else relative to the graph's own shared folder. */
export function displaySource(source: string, root: string): string {
  const lib = packageRelative(source);
  if (lib !== null) return lib;
  return root && source.startsWith(root) && source.length > root.length ? source.slice(root.length) : source;
}
