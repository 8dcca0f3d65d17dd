/** Human-readable numbers for labels, tooltips and the inspector. */

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];

export function formatBytes(b: number | null | undefined): string {
  if (b === null || b === undefined || !Number.isFinite(b)) return "—";
  let v = Math.abs(b);
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) { v /= 1024; u++; }
  const digits = u === 0 || v >= 100 ? 0 : v >= 10 ? 1 : 2;
  return `${b < 0 ? "-" : ""}${v.toFixed(digits)} ${UNITS[u]}`;
}

/** "4.50 MiB (4,718,592 B)" — the exact count matters when comparing two captures. */
export function formatBytesLong(b: number | null | undefined): string {
  if (b === null || b === undefined || !Number.isFinite(b)) return "—";
  if (Math.abs(b) < 1024) return `${b} B`;
  return `${formatBytes(b)} (${formatCount(Math.round(b))} B)`;
}

export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "—";
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms >= 10) return `${ms.toFixed(1)} ms`;
  if (ms >= 0.1) return `${ms.toFixed(2)} ms`;
  return `${(ms * 1000).toFixed(1)} µs`;
}

export function formatShape(shape: readonly number[] | null | undefined): string {
  if (!shape) return "—";
  return `[${shape.join(", ")}]`;
}

/** Compact form for node sub-labels: 8×16384 f32 */
export function shortShape(shape: readonly number[] | null | undefined, dtype?: string | null): string {
  if (!shape) return "";
  const s = shape.length === 0 ? "scalar" : shape.join("×");
  return dtype ? `${s} ${shortDtype(dtype)}` : s;
}

const SHORT_DTYPE: Record<string, string> = {
  float32: "f32", float64: "f64", float16: "f16", bfloat16: "bf16", int64: "i64", int32: "i32", int16: "i16",
  int8: "i8", uint8: "u8", bool: "bool", complex64: "c64", complex128: "c128",
};
export function shortDtype(dtype: string): string {
  const d = dtype.startsWith("torch.") ? dtype.slice(6) : dtype;
  return SHORT_DTYPE[d] ?? d;
}

const DTYPE_BYTES: Record<string, number> = {
  float64: 8, double: 8, float32: 4, float: 4, float16: 2, half: 2, bfloat16: 2, int64: 8, long: 8, int32: 4,
  int: 4, int16: 2, short: 2, int8: 1, uint8: 1, bool: 1, complex32: 4, complex64: 8, complex128: 16,
  uint16: 2, uint32: 4, uint64: 8, quint8: 1, qint8: 1, qint32: 4, quint4x2: 1,
};

/** Element size of a torch dtype name; unknown names fall back to the bit width in the name (float8_e4m3fn → 1). */
export function dtypeBytes(dtype: string | null | undefined): number | null {
  if (!dtype) return null;
  const d = dtype.startsWith("torch.") ? dtype.slice(6) : dtype;
  if (d in DTYPE_BYTES) return DTYPE_BYTES[d];
  const m = /(\d+)/.exec(d);
  if (m) return Math.max(1, Math.round(Number(m[1]) / 8));
  return null;
}

export function numel(shape: readonly number[]): number {
  let p = 1;
  for (const s of shape) p *= s;
  return p;
}

export function formatValue(v: unknown, max = 200): string {
  let s: string;
  if (typeof v === "string") s = JSON.stringify(v);
  else {
    try { s = JSON.stringify(v) ?? String(v); } catch { s = String(v); }
  }
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** One formatter for all: `toLocaleString("en-US")` builds a new one per call (~0.1 ms, which adds up per group). */
const COUNT = new Intl.NumberFormat("en-US");

export function formatCount(n: number): string {
  return COUNT.format(n);
}
