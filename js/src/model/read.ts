/**
 * Reading parsed JSON that may be broken or from another release: each reader returns the value when it has the
 * type the views need, else an empty or null one, so the decoders (model/decode.ts, diff/decode.ts, nway/doc.ts)
 * never test for undefined and never trust a field's type.
 */
export type Obj = Record<string, unknown>;

export const obj = (v: unknown): Obj => (v && typeof v === "object" && !Array.isArray(v) ? (v as Obj) : {});
export const arr = <T = unknown>(v: unknown): T[] => (Array.isArray(v) ? (v as T[]) : []);
/** a finite number, else null */
export const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);
export const str = (v: unknown): string | null => (typeof v === "string" ? v : null);
/** node ids: the finite numbers of a list */
export const ids = (v: unknown): number[] => arr(v).map(Number).filter(Number.isFinite);
/** a matching's pairs `[[a, b], ...]` */
export const idPairs = (v: unknown): [number, number][] =>
  arr(v).map((p) => { const q = arr(p); return [Number(q[0]), Number(q[1])] as [number, number]; });
/** changed pairs with their fields `[[a, b, [field, ...]], ...]` */
export const changedPairs = (v: unknown): [number, number, string[]][] =>
  arr(v).map((p) => { const q = arr(p); return [Number(q[0]), Number(q[1]), arr(q[2]).map(String)] as [number, number, string[]]; });
