/**
 * A group of the hierarchy (model/grouping.ts builds them): its kind, name, members and place. In a module of its
 * own so that the folding of repeated modules (repeats.ts), which grouping.ts calls, can make groups without
 * importing grouping.ts back.
 */

export type ClusterKind = "root" | "module" | "repeat" | "chain" | "fanin" | "range";
/** A child is a node index or a cluster. */
export type Child = number | Cluster;

export interface Cluster {
  id: string;
  kind: ClusterKind;
  label: string;
  /** module path for module clusters */
  path: string | null;
  /** the module's class (meta.modules; for a repeat, its members' class), or null when the graph does not say */
  cls: string | null;
  /** a folded run of identical modules: how many, and the ops each holds */
  repeat: { count: number; each: number } | null;
  parent: Cluster | null;
  children: Child[];
  /** number of graph nodes inside */
  size: number;
  depth: number;
  /** smallest topological position inside: used to keep blocks in flow order */
  order: number;
}

/** A new, empty group. */
export function mk(id: string, kind: ClusterKind, label: string, path: string | null, parent: Cluster | null): Cluster {
  return { id, kind, label, path, cls: null, repeat: null, parent, children: [], size: 0, depth: 0, order: 0 };
}
