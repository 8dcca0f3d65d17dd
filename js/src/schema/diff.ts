/**
 * Types of the diff document ("graphwidget-diff", version 1; docs/diff.md): two graph documents, which
 * of their nodes match, what changed, a summary and the rows of the Changes tab. Python computes all of it; the
 * view only shows it.
 */
import type { GraphDoc } from "./types";

/** The per-graph totals of the summary; the same keys hold deltas (B − A) and ratios (B / A). */
export interface DiffTotals {
  nodes: number | null;
  edges: number | null;
  saved_bytes: number | null;
  grad_bytes: number | null;
  forward_ms: number | null;
  backward_ms: number | null;
  step_ms: number | null;
}

export const TOTAL_KEYS = ["nodes", "edges", "saved_bytes", "grad_bytes", "forward_ms", "backward_ms", "step_ms"] as const;
export type TotalKey = (typeof TOTAL_KEYS)[number];

/**
 * The speed verdict B / A with its 95 % interval (distribution-free, of the median per-round ratio): of the whole
 * step (plain, uninstrumented runs; `clock` names the clock), or of the backward in documents written before the verdicts had phases (`clock` null).
 */
export interface DiffTiming {
  ratio: number | null;
  low: number | null;
  high: number | null;
  runs: number | null;
  verdict: string | null;
  clock: string | null;
}

export interface TensorCheck {
  name: string;
  /** Python's words for why this tensor differs (a gradient on one side only, a float64 difference, ...). */
  note: string | null;
  allclose: boolean | null;
  max_abs: number | null;
  max_rel: number | null;
  shape_a: number[] | null;
  shape_b: number[] | null;
}

export interface Equivalence {
  equivalent: boolean | null;
  tensors: TensorCheck[];
}

export interface DiffSummary {
  a: DiffTotals;
  b: DiffTotals;
  delta: DiffTotals;
  ratio: DiffTotals;
  /** The 95 % interval of each measured ratio (the time rows of a profiled compare), by total. */
  interval: Partial<Record<TotalKey, [number, number]>>;
  timing: DiffTiming | null;
  equivalence: Equivalence | null;
  /** Both verdicts in one line, as Python words them (Diff.sentence()); null in older documents. */
  sentence: string | null;
  /** Where the two sides first part (gw.compare's divergence search: node ids of A and B); null when none. */
  divergence: { a: number; b: number } | null;
}

/** Costs of one Changes row on one side (or their delta). */
export interface RowCosts {
  count: number | null;
  bwd_ms: number | null;
  fwd_ms: number | null;
  grad_bytes: number | null;
  saved_bytes: number | null;
}

/** One row of the Changes tab: an op name or a source location, and the nodes it covers. */
export interface ChangeRow {
  key: string;
  added: number[];
  removed: number[];
  changed: [number, number][];
  a: RowCosts;
  b: RowCosts;
  delta: RowCosts;
}

export interface DiffDoc {
  format: "graphwidget-diff";
  version: number;
  /** pane titles, A then B */
  labels: [string, string];
  a: GraphDoc;
  b: GraphDoc;
  /** every matched pair [a_id, b_id] (unchanged and changed) */
  matched: [number, number][];
  /** changed pairs with the names of the fields that differ */
  changed: [number, number, string[]][];
  /** ids only in A */
  removed: number[];
  /** ids only in B */
  added: number[];
  summary: DiffSummary;
  changes: { by_op: ChangeRow[]; by_source: ChangeRow[] };
  findings: unknown;
}
