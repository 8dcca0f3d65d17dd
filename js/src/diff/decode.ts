/**
 * Decoding the diff document: the same payload as a graph (model/decode.ts: binary, or gzip'd UTF-8 JSON from an
 * older export; from the `_diff` trait or a base64 <script> block), checked and with absent optional fields filled,
 * so the views never test for undefined.
 */
import { checkFormat, decodeDocument, normaliseGraph, type Unpacker } from "../model/decode";
import { arr, changedPairs, idPairs, ids, num, obj, str, type Obj } from "../model/read";
import { normaliseFindings } from "../model/findings";
import type { Finding } from "../schema/types";
import { TOTAL_KEYS, type ChangeRow, type DiffDoc, type DiffSummary, type DiffTiming, type DiffTotals, type Equivalence, type RowCosts, type TotalKey } from "../schema/diff";

export async function decodeDiff(value: unknown, unpacker?: Unpacker | null, timings?: { unpack: number }): Promise<DiffDoc> {
  return normaliseDiff(await decodeDocument(value, unpacker, timings));
}

const shape = (v: unknown): number[] | null => (Array.isArray(v) ? v.map(Number) : null);

export function normaliseDiff(raw: unknown): DiffDoc {
  const o = obj(raw);
  if (!raw || typeof raw !== "object") throw new Error("diff JSON must be an object");
  checkFormat(o, "graphwidget-diff", "diff");
  if (!o.a || !o.b) throw new Error("a diff needs both graphs, `a` and `b`");
  const labels = arr(o.labels);
  const changes = obj(o.changes);
  return {
    format: "graphwidget-diff",
    version: typeof o.version === "number" ? o.version : 1,
    labels: [labelOf(labels[0], "A"), labelOf(labels[1], "B")],
    a: normaliseGraph(o.a),
    b: normaliseGraph(o.b),
    matched: idPairs(o.matched),
    changed: changedPairs(o.changed),
    removed: ids(o.removed),
    added: ids(o.added),
    summary: summaryOf(obj(o.summary)),
    changes: { by_op: arr(changes.by_op).map(rowOf), by_source: arr(changes.by_source).map(rowOf) },
    findings: o.findings ?? null,
  };
}

/** The findings of both sides as the diff view shows them. */
export interface DiffFindings {
  /** null: that graph was never advised */
  a: Finding[] | null;
  b: Finding[] | null;
  /** indices into `a` of the findings B no longer has */
  resolved: Set<number>;
}

/**
 * The diff document's `findings` ({"a", "b", "resolved"}, written by Python's Diff.to_dict); when it is null (an
 * older document, or neither side advised) each side's own graph findings are shown, with nothing resolved.
 */
export function diffFindings(doc: DiffDoc): DiffFindings {
  const raw = doc.findings && typeof doc.findings === "object" && !Array.isArray(doc.findings) ? (doc.findings as Obj) : null;
  const a = raw && "a" in raw ? normaliseFindings(raw.a) : doc.a.findings ?? null;
  const b = raw && "b" in raw ? normaliseFindings(raw.b) : doc.b.findings ?? null;
  const n = a?.length ?? 0;
  const resolved = new Set(raw ? arr(raw.resolved).map(Number).filter((i) => Number.isInteger(i) && i >= 0 && i < n) : []);
  return { a, b, resolved };
}

function labelOf(v: unknown, fallback: string): string {
  return typeof v === "string" && v.trim() ? v : fallback;
}

function totals(v: unknown): DiffTotals {
  const o = obj(v);
  return Object.fromEntries(TOTAL_KEYS.map((k) => [k, num(o[k])])) as unknown as DiffTotals;
}

function summaryOf(o: Obj): DiffSummary {
  const t = o.timing && typeof o.timing === "object" ? obj(o.timing) : null;
  const timing: DiffTiming | null = t ? { ratio: num(t.ratio), low: num(t.low), high: num(t.high), runs: num(t.runs), verdict: str(t.verdict),
    clock: str(t.clock) } : null;
  const e = o.equivalence && typeof o.equivalence === "object" ? obj(o.equivalence) : null;
  const equivalence: Equivalence | null = e ? {
    equivalent: typeof e.equivalent === "boolean" ? e.equivalent : null,
    tensors: arr(e.tensors).map((x) => {
      const q = obj(x);
      return { name: String(q.name ?? "?"), note: str(q.note), allclose: typeof q.allclose === "boolean" ? q.allclose : null,
        max_abs: num(q.max_abs), max_rel: num(q.max_rel), shape_a: shape(q.shape_a), shape_b: shape(q.shape_b) };
    }),
  } : null;
  const interval: Partial<Record<TotalKey, [number, number]>> = {};
  const iv = obj(o.interval);
  for (const k of TOTAL_KEYS) {
    const pair = arr(iv[k]);
    const lo = num(pair[0]), hi = num(pair[1]);
    if (lo !== null && hi !== null) interval[k] = [lo, hi];
  }
  const dv = o.divergence && typeof o.divergence === "object" ? obj(o.divergence) : null;
  const da = dv ? num(dv.a) : null, db = dv ? num(dv.b) : null;
  const divergence = da !== null && db !== null ? { a: da, b: db } : null;
  return { a: totals(o.a), b: totals(o.b), delta: totals(o.delta), ratio: totals(o.ratio), interval, timing, equivalence,
    sentence: str(o.sentence), divergence };
}

function costs(v: unknown): RowCosts {
  const o = obj(v);
  return { count: num(o.count), bwd_ms: num(o.bwd_ms), fwd_ms: num(o.fwd_ms), grad_bytes: num(o.grad_bytes), saved_bytes: num(o.saved_bytes) };
}

function rowOf(v: unknown): ChangeRow {
  const o = obj(v);
  return {
    key: String(o.key ?? ""),
    added: ids(o.added),
    removed: ids(o.removed),
    changed: idPairs(o.changed),
    a: costs(o.a), b: costs(o.b), delta: costs(o.delta),
  };
}
