/**
 * The N-way document (`"format": "graphwidget-nway"`, docs/nway.md §4) as the front end reads it: N graphs (the
 * first the reference), one pair entry per other graph (its matching to the reference), the verdict table, the
 * sentence and, for the ranks of one job, the per-rank record. Decoded from the same bytes as a graph (gzip or
 * plain UTF-8 JSON) and checked, with absent optional fields filled, so the views never test for undefined.
 */
import { checkFormat, decodeDocument, normaliseGraph, type Unpacker } from "../model/decode";
import { isBase64Data } from "../model/packed";
import { arr, changedPairs, idPairs, ids, num, obj, str, type Obj } from "../model/read";
import type { GraphDoc } from "../schema/types";

/** A compiled region of one side (docs/nway.md §2): its node there and the reference nodes it covers. */
export interface Region {
  node: number;
  op: string;
  covers: number[];
  ops: Record<string, number>;
  sources: string[];
  bwd_ms: number | null;
  covered_bwd_ms: number | null;
}

/** One side's matching to the reference (ids: `ref` in graphs[0], `side` in graphs[side]). */
export interface PairEntry {
  side: number;
  matched: [number, number][];
  changed: [number, number, string[]][];
  removed: number[];
  added: number[];
  regions: Region[];
}

/** A verdict of the table (whole step, forward, backward): its words and its direction. */
export interface VerdictCell { verdict: string | null; text: string | null; }

/** A row of the verdict table: one side against the reference. */
export interface TableRow {
  label: string;
  reference: boolean;
  maths: string | null;
  /** false: this side does not compute the reference's maths (the alarm) */
  equivalent: boolean | null;
  step: VerdictCell | null;
  forward: VerdictCell | null;
  backward: VerdictCell | null;
  nodes: number | null;
  matched: number | null;
  changed: number | null;
  added: number | null;
  removed: number | null;
  fused: { regions: number; covers: number } | null;
}

export interface PerRank { rank: number; forward_ms: number | null; backward_ms: number | null; compute_ms: number | null; wait_ms: number | null; nodes: number; same_structure: boolean; }
export interface Straggler { rank: number; compute_ms: number; median_ms: number; excess_ms: number; node: number | null; node_excess_ms: number | null; }
export interface Divergent {
  rank: number; added: number[]; removed: number[]; lines: string[];
  first: { node: number; op: string; source: string | null; code: string | null; in: "rank" | "reference" } | null;
}

/** Per reference node (aligned with `ids`): each rank's ms (null: absent there) and their statistics. */
export interface RankNodes {
  ids: number[];
  fwd_ms: Record<string, (number | null)[]>;
  bwd_ms: Record<string, (number | null)[]>;
  step_ms: Record<string, (number | null)[]>;
  stats: { min: (number | null)[]; median: (number | null)[]; max: (number | null)[]; straggler: (number | null)[]; spread_ms: (number | null)[] } | null;
}

export interface RanksRecord {
  world_size: number;
  ranks: number[];
  /** the rank of each graph */
  shown: number[];
  reference_rank: number;
  per_rank: PerRank[];
  straggler: Straggler | null;
  divergent: Divergent[];
  nodes: RankNodes;
}

export interface NWayDoc {
  kind: "sides" | "ranks";
  labels: string[];
  graphs: GraphDoc[];
  /** pairs[k - 1] is graph k's matching to the reference (sorted by side) */
  pairs: PairEntry[];
  rows: TableRow[];
  sentence: string;
  ranks: RanksRecord | null;
}

const msList = (v: unknown): (number | null)[] => arr(v).map(num);
const msByRank = (v: unknown): Record<string, (number | null)[]> =>
  Object.fromEntries(Object.entries(obj(v)).map(([k, x]) => [k, msList(x)]));

export async function decodeNway(value: unknown, unpacker?: Unpacker | null, timings?: { unpack: number }): Promise<NWayDoc> {
  if (value && typeof value === "object" && !ArrayBuffer.isView(value) && !(value instanceof ArrayBuffer) && !isBase64Data(value)) return normaliseNway(value);
  return normaliseNway(await decodeDocument(value, unpacker, timings));
}

export function normaliseNway(raw: unknown): NWayDoc {
  const o = obj(raw);
  checkFormat(o, "graphwidget-nway", "N-way document", true);
  const graphs = arr(o.graphs).map((g) => normaliseGraph(g));
  if (graphs.length < 2) throw new Error("an N-way document needs at least two graphs");
  const labels = graphs.map((_, k) => str(arr(o.labels)[k]) ?? `graph ${k}`);
  const pairs: PairEntry[] = [];
  for (const p of arr(o.pairs)) {
    const q = obj(p);
    const side = Number(q.side);
    if (!Number.isInteger(side) || side < 1 || side >= graphs.length) throw new Error(`pair for a side that does not exist (${String(q.side)})`);
    pairs.push({
      side,
      matched: idPairs(q.matched),
      changed: changedPairs(q.changed),
      removed: ids(q.removed),
      added: ids(q.added),
      regions: arr(q.regions).map((r) => {
        const x = obj(r);
        return { node: Number(x.node), op: str(x.op) ?? "CompiledFunctionBackward", covers: ids(x.covers),
          ops: Object.fromEntries(Object.entries(obj(x.ops)).map(([k, v]) => [k, Number(v)])),
          sources: arr(x.sources).map(String), bwd_ms: num(x.bwd_ms), covered_bwd_ms: num(x.covered_bwd_ms) };
      }),
    });
  }
  pairs.sort((a, b) => a.side - b.side);
  if (pairs.length !== graphs.length - 1 || pairs.some((p, i) => p.side !== i + 1)) throw new Error("an N-way document needs one pair per graph after the reference");
  const cell = (v: unknown): VerdictCell | null => (v && typeof v === "object" ? { verdict: str(obj(v).verdict), text: str(obj(v).text) } : null);
  const rowsRaw = arr(obj(o.table).rows);
  const rows: TableRow[] = labels.map((label, k) => {
    const r = obj(rowsRaw.find((x) => obj(x).label === label) ?? rowsRaw[k]);
    const fused = obj(r.fused);
    return {
      label, reference: k === 0, maths: str(r.maths), equivalent: typeof r.equivalent === "boolean" ? r.equivalent : null,
      step: cell(r.step), forward: cell(r.forward), backward: cell(r.backward),
      nodes: num(r.nodes), matched: num(r.matched), changed: num(r.changed), added: num(r.added), removed: num(r.removed),
      fused: r.fused ? { regions: Number(fused.regions), covers: Number(fused.covers) } : null,
    };
  });
  return { kind: o.kind === "ranks" ? "ranks" : "sides", labels, graphs, pairs, rows, sentence: str(o.sentence) ?? "",
    ranks: o.kind === "ranks" && o.ranks ? ranksOf(obj(o.ranks)) : null };
}

function ranksOf(r: Obj): RanksRecord {
  const n = obj(r.nodes), st = n.stats ? obj(n.stats) : null;
  const s = r.straggler ? obj(r.straggler) : null;
  return {
    world_size: Number(r.world_size), ranks: ids(r.ranks), shown: ids(r.shown), reference_rank: Number(r.reference_rank),
    per_rank: arr(r.per_rank).map((p) => {
      const x = obj(p);
      return { rank: Number(x.rank), forward_ms: num(x.forward_ms), backward_ms: num(x.backward_ms), compute_ms: num(x.compute_ms),
        wait_ms: num(x.wait_ms), nodes: Number(x.nodes), same_structure: x.same_structure !== false };
    }),
    straggler: s ? { rank: Number(s.rank), compute_ms: Number(s.compute_ms), median_ms: Number(s.median_ms), excess_ms: Number(s.excess_ms),
      node: num(s.node), node_excess_ms: num(s.node_excess_ms) } : null,
    divergent: arr(r.divergent).map((d) => {
      const x = obj(d), f = x.first ? obj(x.first) : null;
      return { rank: Number(x.rank), added: ids(x.added), removed: ids(x.removed), lines: arr(x.lines).map(String),
        first: f ? { node: Number(f.node), op: str(f.op) ?? "?", source: str(f.source), code: str(f.code), in: f.in === "reference" ? "reference" : "rank" } : null };
    }),
    nodes: {
      ids: ids(n.ids), fwd_ms: msByRank(n.fwd_ms), bwd_ms: msByRank(n.bwd_ms), step_ms: msByRank(n.step_ms),
      stats: st ? { min: msList(st.min), median: msList(st.median), max: msList(st.max), straggler: msList(st.straggler), spread_ms: msList(st.spread_ms) } : null,
    },
  };
}
