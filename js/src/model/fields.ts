/**
 * How each field of a node and of an edge is normalised, for records (decode.ts) and columns (columnar.ts) alike:
 * a value of the wrong type, or an absent one, becomes the field's empty value (mostly null), so the views never
 * test for undefined.
 */
import { arr, num, str } from "./read";

export type Normalise = (v: unknown) => unknown;

const obj = (v: unknown): object | null => (v && typeof v === "object" ? v : null);
const list = (v: unknown): unknown[] | null => (Array.isArray(v) ? v : null);

/** The node fields (id aside) and their normalisers; an absent field is the value of `undefined`. */
export const NODE_FIELDS: Record<string, Normalise> = {
  op: (v) => (typeof v === "string" ? v : String(v ?? "?")),
  kind: (v) => (typeof v === "string" ? v : "backward"),
  outputs: list,
  saved: arr,
  attrs: (v) => obj(v) ?? {},
  saved_bytes: (v) => num(v) ?? 0,
  tensor: obj,
  source: str,
  code: str,
  module: str,
  out_stride: list,
  out_contiguous: list,
  seq: num,
  fwd_ms: num,
  bwd_ms: num,
  grad_bytes: num,
  peak_bytes: num,
  rank_spread_ms: num,
};

/** The edge fields (source and target aside) and their normalisers. */
export const EDGE_FIELDS: Record<string, Normalise> = {
  output: num,
  slot: num,
  shape: list,
  dtype: str,
  also: list,
};

