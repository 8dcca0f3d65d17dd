/**
 * The N-way matching indexed for the view (docs/nway.md, front-end work list 2–3). Pane 0 is the reference; pane k
 * shows graphs[k], matched to the reference by pairs[k - 1]. Every link goes through the reference: pane k's node
 * → its reference node → pane j's node. A reference node that pane j lacks but one of pane j's compiled regions
 * covers leads to that region's node (the node was fused).
 *
 * Status per node (drawn with the diff view's marks): in pane k, "changed" / "added" (only in that side) as in the
 * pair; in the reference pane, "changed" when some side changed it and "removed" when some side has no counterpart
 * (for ranks: a node present on some ranks only), with the sides it is missing from.
 */
import type { GraphModel } from "../model/graph";
import { ST_ADDED, ST_CHANGED, ST_REMOVED, ST_UNCHANGED } from "../diff/model";
import type { NWayDoc, Region } from "./doc";

export class NWayModel {
  readonly n: number;
  /** per pane, per node index: a status code (diff/model.ts) */
  readonly status: Uint8Array[];
  /** per pane, per node index: the reference node's index, or -1 (pane 0: itself) */
  readonly toRef: Int32Array[];
  /** per pane, per reference node index: that pane's node index, or -1 (pane 0: itself) */
  readonly fromRef: Int32Array[];
  /** per pane, per reference node index: the index of the region node that covers it there, or -1 */
  readonly fusedInto: Int32Array[];
  /** per pane, per node index: the fields that differ from the reference's node (changed pairs only) */
  readonly fields: Map<number, string[]>[];
  /** per pane, node index of a region node → the region */
  readonly regions: Map<number, Region>[];
  /** per reference node index: in how many other sides it has a counterpart */
  readonly presentIn: Int32Array;

  constructor(readonly doc: NWayDoc, readonly models: GraphModel[]) {
    const n = (this.n = models.length);
    const ref = models[0];
    this.status = models.map((m) => new Uint8Array(m.n).fill(ST_UNCHANGED));
    this.toRef = models.map((m, k) => (k === 0 ? Int32Array.from({ length: m.n }, (_, i) => i) : new Int32Array(m.n).fill(-1)));
    this.fromRef = models.map((_, k) => (k === 0 ? Int32Array.from({ length: ref.n }, (_, i) => i) : new Int32Array(ref.n).fill(-1)));
    this.fusedInto = models.map(() => new Int32Array(ref.n).fill(-1));
    this.fields = models.map(() => new Map<number, string[]>());
    this.regions = models.map(() => new Map<number, Region>());
    this.presentIn = new Int32Array(ref.n);
    for (let k = 1; k < n; k++) {
      const p = doc.pairs[k - 1], m = models[k];
      const link = (a: number, b: number): [number, number] => {
        const i = ref.indexOf.get(a), j = m.indexOf.get(b);
        if (i === undefined || j === undefined) return [-1, -1];
        this.fromRef[k][i] = j;
        this.toRef[k][j] = i;
        return [i, j];
      };
      for (const [a, b] of p.matched) link(a, b);
      for (const [a, b, f] of p.changed) {
        const [i, j] = link(a, b);
        if (i < 0) continue;
        this.status[k][j] = ST_CHANGED;
        this.fields[k].set(j, f);
        if (this.status[0][i] !== ST_REMOVED) this.status[0][i] = ST_CHANGED;
      }
      for (const b of p.added) {
        const j = m.indexOf.get(b);
        if (j !== undefined) this.status[k][j] = ST_ADDED;
      }
      for (const a of p.removed) {
        const i = ref.indexOf.get(a);
        if (i !== undefined) this.status[0][i] = ST_REMOVED;
      }
      for (const r of p.regions) {
        const j = m.indexOf.get(r.node);
        if (j === undefined) continue;
        this.regions[k].set(j, r);
        for (const a of r.covers) {
          const i = ref.indexOf.get(a);
          if (i !== undefined && this.fromRef[k][i] < 0) this.fusedInto[k][i] = j;
        }
      }
      for (let i = 0; i < ref.n; i++) if (this.fromRef[k][i] >= 0) this.presentIn[i]++;
    }
  }

  /** The reference node index of node i of pane k, or -1. */
  refOf(k: number, i: number): number {
    return i >= 0 ? this.toRef[k][i] : -1;
  }

  /**
   * Node i of pane k in every pane: its counterpart's index (-1 where none), and whether that node is a compiled
   * region standing in for it (the node was fused there).
   */
  counterparts(k: number, i: number): { node: number; fused: boolean }[] {
    const r = this.refOf(k, i);
    return this.models.map((_, j) => {
      if (j === k) return { node: i, fused: false };
      if (r < 0) return { node: -1, fused: false };
      const c = this.fromRef[j][r];
      if (c >= 0) return { node: c, fused: false };
      const f = this.fusedInto[j][r];
      return { node: f, fused: f >= 0 };
    });
  }

  /** The panes (other than the reference) where reference node r has no counterpart. */
  missingIn(r: number): number[] {
    const out: number[] = [];
    for (let k = 1; k < this.n; k++) if (this.fromRef[k][r] < 0) out.push(k);
    return out;
  }

  /** Node index → id in pane k, or null for -1. */
  idOf(k: number, i: number): number | null {
    return i >= 0 ? this.models[k].nodes[i].id : null;
  }
}
