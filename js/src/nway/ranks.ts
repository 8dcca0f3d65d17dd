/**
 * The ranks of one job (kind "ranks", docs/nway.md §3): one reference node's time on every rank, its statistics and
 * slowest rank, read from the document's `ranks.nodes` (computed in Python, not here); and what each pane's header
 * says about its rank (the straggler, a graph that differs).
 */
import type { RanksRecord } from "./doc";
import { shortSource } from "../model/findings";

/** One reference node across the ranks: each rank's ms (null where the rank lacks the node) and the statistics. */
export interface NodeRankTimes {
  id: number;
  rows: { rank: number; fwd: number | null; bwd: number | null; step: number | null }[];
  min: number | null;
  median: number | null;
  max: number | null;
  spread: number | null;
  /** the slowest rank on this node, or null */
  straggler: number | null;
}

export class RankTimes {
  private index = new Map<number, number>();

  constructor(readonly rec: RanksRecord) {
    rec.nodes.ids.forEach((id, i) => this.index.set(id, i));
  }

  /** The record of reference node `id`, or null when the ranks were not timed there. */
  of(id: number): NodeRankTimes | null {
    const i = this.index.get(id);
    if (i === undefined) return null;
    const n = this.rec.nodes, at = (by: Record<string, (number | null)[]>, r: number) => by[String(r)]?.[i] ?? null;
    const rows = this.rec.ranks.map((r) => ({ rank: r, fwd: at(n.fwd_ms, r), bwd: at(n.bwd_ms, r), step: at(n.step_ms, r) }));
    if (rows.every((x) => x.step === null && x.fwd === null && x.bwd === null)) return null;
    const st = n.stats;
    return { id, rows, min: st?.min[i] ?? null, median: st?.median[i] ?? null, max: st?.max[i] ?? null,
      spread: st?.spread_ms[i] ?? null, straggler: st?.straggler[i] ?? null };
  }

  /** The rank shown in pane k. */
  rankOf(k: number): number | null {
    return this.rec.shown[k] ?? null;
  }

  /** Pane k's badges: "straggler" (with its excess compute) and "graph differs" (with the divergent line). */
  badges(k: number, fmt: (ms: number) => string): { kind: "straggler" | "divergent"; text: string; title: string }[] {
    const r = this.rankOf(k), out: { kind: "straggler" | "divergent"; text: string; title: string }[] = [];
    const s = this.rec.straggler;
    if (r !== null && s && s.rank === r) {
      out.push({ kind: "straggler", text: `straggler +${fmt(s.excess_ms)}`,
        title: `the slowest rank: ${fmt(s.compute_ms)} inside nodes, the median rank ${fmt(s.median_ms)}` });
    }
    const d = this.rec.divergent.find((x) => x.rank === r);
    if (d) {
      const where = d.first?.source ? ` at ${shortSource(d.first.source)}` : "";
      out.push({ kind: "divergent", text: `graph differs${where}`,
        title: `${d.added.length} nodes only on this rank, ${d.removed.length} missing; divergent line ${d.first?.source ?? "?"}${d.first?.code ? `: ${d.first.code}` : ""}` });
    }
    return out;
  }
}
