/**
 * The advisor's findings (computed in Python, docs/schema.md "Findings") as the views need them: normalised on
 * decode, mapped from node ids to node indices, and summed per drawn item for the badges. Nothing is analysed here.
 */
import type { Finding, FindingEvidence } from "../schema/types";
import type { GraphModel } from "./graph";

/** Badge levels, in the order they win when one item holds several findings. */
export const LEVEL_NONE = 0;
/** a finding of A that B no longer has (diff view) */
export const LEVEL_RESOLVED = 1;
export const LEVEL_INFO = 2;
export const LEVEL_WARNING = 3;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === "object" && !Array.isArray(v);
const strOrNull = (v: unknown): string | null => (typeof v === "string" ? v : null);

/**
 * The document's `findings` value → a clean list, or null when the graph was never advised (absent or null).
 * Python validates on write and read; this only makes a hand-edited file safe to show: entries without a rule or a
 * message are dropped, an unknown severity counts as "info", non-numeric node ids are dropped.
 */
export function normaliseFindings(v: unknown): Finding[] | null {
  if (!Array.isArray(v)) return null;
  const out: Finding[] = [];
  for (const raw of v) {
    if (!isObj(raw) || typeof raw.rule !== "string" || !raw.rule || typeof raw.message !== "string") continue;
    out.push({
      rule: raw.rule,
      severity: raw.severity === "warning" ? "warning" : "info",
      nodes: (Array.isArray(raw.nodes) ? raw.nodes : []).map(Number).filter(Number.isFinite),
      source: strOrNull(raw.source),
      code: strOrNull(raw.code),
      module: strOrNull(raw.module),
      message: raw.message,
      suggestion: strOrNull(raw.suggestion),
      evidence: (isObj(raw.evidence) ? raw.evidence : {}) as FindingEvidence,
    });
  }
  return out;
}

/** `/long/path/model.py:42` → `model.py:42` (what Python's short_source prints); "?" when unknown. */
export function shortSource(source: string | null): string {
  if (!source) return "?";
  const colon = source.lastIndexOf(":");
  const line = colon >= 0 ? source.slice(colon + 1) : "";
  const path = colon >= 0 && /^\d+$/.test(line) ? source.slice(0, colon) : source;
  const base = path.slice(Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\")) + 1) || path;
  return path === source ? base : `${base}:${line}`;
}

/** The findings of one pane mapped onto its nodes. */
export class FindingMarks {
  /** per finding: the node indices it names that this graph has, the cause first */
  readonly nodes: Int32Array[];
  /** per finding: its badge level */
  readonly level: Uint8Array;
  /** per node: the highest level of the findings naming it (LEVEL_NONE when none) */
  readonly nodeLevel: Uint8Array;
  /** per node: how many findings name it */
  readonly nodeCount: Uint16Array;

  constructor(readonly model: GraphModel, readonly findings: Finding[], resolved: ReadonlySet<number> = new Set()) {
    this.nodes = findings.map((f) => {
      const seen = new Set<number>();
      const idx: number[] = [];
      for (const id of f.nodes) {
        const i = model.indexOf.get(id);
        if (i !== undefined && !seen.has(i)) { seen.add(i); idx.push(i); }
      }
      return Int32Array.from(idx);
    });
    this.level = Uint8Array.from(findings, (f, k) => (resolved.has(k) ? LEVEL_RESOLVED : f.severity === "warning" ? LEVEL_WARNING : LEVEL_INFO));
    this.nodeLevel = new Uint8Array(model.n);
    this.nodeCount = new Uint16Array(model.n);
    this.nodes.forEach((list, k) => {
      for (const i of list) {
        this.nodeLevel[i] = Math.max(this.nodeLevel[i], this.level[k]);
        this.nodeCount[i]++;
      }
    });
  }

  /** The indices of the findings that name node i. */
  findingsOf(i: number): number[] {
    const out: number[] = [];
    if (i < 0 || !this.nodeCount[i]) return out;
    this.nodes.forEach((list, k) => { if (list.includes(i)) out.push(k); });
    return out;
  }

  /** A mask over the nodes of finding k (for outlining them like search matches). */
  mask(k: number): Uint8Array {
    const m = new Uint8Array(this.model.n);
    for (const i of this.nodes[k] ?? []) m[i] = 1;
    return m;
  }

  /**
   * Per drawn item (`rep`: node index → item): the highest level and how many distinct findings have a node in it
   * (a group holding eight nodes of one finding counts one).
   */
  perItem(rep: Int32Array, items: number): { level: Uint8Array; count: Uint16Array } {
    const level = new Uint8Array(items);
    const count = new Uint16Array(items);
    const stamp = new Int32Array(items).fill(-1);
    this.nodes.forEach((list, k) => {
      for (const i of list) {
        const r = rep[i];
        if (r < 0 || stamp[r] === k) continue;
        stamp[r] = k;
        count[r]++;
        level[r] = Math.max(level[r], this.level[k]);
      }
    });
    return { level, count };
  }
}
