/**
 * The diff indexed for the view: every node's status on its side, its counterpart on the other side, and the
 * fields that differ for a changed pair. Side 0 is A, side 1 is B.
 *
 * Status (docs/diff.md): a node of A is "removed" if listed in `removed`, "changed" if its pair is in
 * `changed`, else "unchanged"; for B "added" / "changed" / "unchanged" likewise.
 */
import type { GraphModel } from "../model/graph";
import type { DiffDoc } from "../schema/diff";

export type Side = 0 | 1;
export type StatusName = "unchanged" | "changed" | "added" | "removed";

/** Status codes as stored per node (0 = not part of a diff). The renderer draws 2, 3 and 4. */
export const ST_NONE = 0, ST_UNCHANGED = 1, ST_CHANGED = 2, ST_ADDED = 3, ST_REMOVED = 4;
export const STATUS_NAMES: Record<number, StatusName> = { 1: "unchanged", 2: "changed", 3: "added", 4: "removed" };

export class DiffModel {
  /** per side, per node index: a status code */
  readonly status: [Uint8Array, Uint8Array];
  /** per side, per node index: the counterpart's index on the other side, or -1 */
  readonly counterpart: [Int32Array, Int32Array];
  /** A node index → names of the fields that differ from its counterpart */
  readonly changedFields = new Map<number, string[]>();
  readonly counts = { matched: 0, changed: 0, added: 0, removed: 0 };

  constructor(readonly doc: DiffDoc, readonly models: [GraphModel, GraphModel]) {
    const [a, b] = models;
    this.status = [new Uint8Array(a.n).fill(ST_UNCHANGED), new Uint8Array(b.n).fill(ST_UNCHANGED)];
    this.counterpart = [new Int32Array(a.n).fill(-1), new Int32Array(b.n).fill(-1)];
    for (const [ida, idb] of doc.matched) {
      const i = a.indexOf.get(ida), j = b.indexOf.get(idb);
      if (i === undefined || j === undefined) continue;
      this.counterpart[0][i] = j;
      this.counterpart[1][j] = i;
      this.counts.matched++;
    }
    for (const [ida, idb, fields] of doc.changed) {
      const i = a.indexOf.get(ida), j = b.indexOf.get(idb);
      if (i !== undefined) { this.status[0][i] = ST_CHANGED; this.changedFields.set(i, fields); }
      if (j !== undefined) this.status[1][j] = ST_CHANGED;
      if (i !== undefined && j !== undefined && this.counterpart[0][i] < 0) {
        this.counterpart[0][i] = j; // a changed pair is a match even if `matched` forgot it
        this.counterpart[1][j] = i;
      }
      this.counts.changed++;
    }
    for (const id of doc.removed) {
      const i = a.indexOf.get(id);
      if (i !== undefined) { this.status[0][i] = ST_REMOVED; this.counts.removed++; }
    }
    for (const id of doc.added) {
      const j = b.indexOf.get(id);
      if (j !== undefined) { this.status[1][j] = ST_ADDED; this.counts.added++; }
    }
  }

  /** Status of node id on a side, or null for an id that side does not have. */
  statusOf(side: Side, id: number): StatusName | null {
    const i = this.models[side].indexOf.get(Number(id));
    return i === undefined ? null : STATUS_NAMES[this.status[side][i]];
  }

  /** Names of the fields that differ, for a node index on either side ([] when not changed). */
  fieldsOf(side: Side, i: number): string[] {
    const ia = side === 0 ? i : this.counterpart[1][i];
    return ia >= 0 ? this.changedFields.get(ia) ?? [] : [];
  }

  /** Node index → id on a side, or null for -1. */
  idOf(side: Side, i: number): number | null {
    return i >= 0 ? this.models[side].nodes[i].id : null;
  }
}

/** A short line for a tooltip: the status, and for a group the counts of its members by status. */
export function statusLine(codes: Uint8Array, members: number[] | null, i: number): string | null {
  if (!members) {
    const s = codes[i];
    return s >= ST_CHANGED ? STATUS_NAMES[s] : null;
  }
  const n = [0, 0, 0, 0, 0];
  for (const m of members) n[codes[m]]++;
  const parts: string[] = [];
  if (n[ST_CHANGED]) parts.push(`${n[ST_CHANGED]} changed`);
  if (n[ST_ADDED]) parts.push(`${n[ST_ADDED]} added`);
  if (n[ST_REMOVED]) parts.push(`${n[ST_REMOVED]} removed`);
  return parts.length ? parts.join(" · ") : null;
}
