/**
 * Colour-by metrics and the colour scale.
 *
 * Values span orders of magnitude (a 4-byte scalar next to a 4 GiB activation), so the scale is logarithmic
 * between the smallest positive and the largest value. The hot end is always the most salient one: on a light page
 * the palette runs from a pale yellow that recedes into the page to a dark red that does not; on a dark page from a
 * dim brown that recedes into the page to a bright yellow that does not (the same hues, the lightness reversed).
 * On top of that, "hot" nodes (the top of the distribution, see hotThreshold) get a thick outline so they jump out
 * even when zoomed far out.
 */
import type { GraphNode } from "../schema/types";
import { dtypeBytes, formatBytes, formatMs, numel } from "./format";

export type MetricName = "grad_bytes" | "saved_bytes" | "peak_bytes" | "bwd_ms" | "fwd_ms" | "output_bytes" | "rank_spread_ms" | "none";

export interface MetricDef {
  name: MetricName;
  label: string;
  /** value of one node, NaN when the graph does not have it */
  value(n: GraphNode): number;
  format(v: number): string;
  /** what the values are, for the legend, when the label alone does not say */
  note?: string;
}

export function outputBytes(n: GraphNode): number {
  if (!n.outputs) return NaN;
  let total = 0;
  let known = false;
  for (const o of n.outputs) {
    if (!o || !o.shape) continue;
    const size = dtypeBytes(o.dtype);
    if (size === null) continue;
    total += numel(o.shape) * size;
    known = true;
  }
  return known ? total : NaN;
}

export const METRICS: Record<MetricName, MetricDef> = {
  grad_bytes: {
    name: "grad_bytes", label: "gradient written", value: (n) => n.grad_bytes ?? NaN, format: formatBytes,
  },
  saved_bytes: { name: "saved_bytes", label: "saved bytes", value: (n) => n.saved_bytes ?? NaN, format: formatBytes },
  // memory-profiled graphs only; a node that holds nothing at the peak is 0 (the palest colour), not missing
  peak_bytes: {
    name: "peak_bytes", label: "alive at the peak", value: (n) => n.peak_bytes ?? NaN, format: formatBytes,
    note: "held at the memory peak: saved activations + gradients",
  },
  bwd_ms: { name: "bwd_ms", label: "backward time", value: (n) => n.bwd_ms ?? NaN, format: formatMs },
  fwd_ms: { name: "fwd_ms", label: "forward time", value: (n) => n.fwd_ms ?? NaN, format: formatMs },
  output_bytes: { name: "output_bytes", label: "output size", value: outputBytes, format: formatBytes },
  // a rank's graph (docs/nway.md): max - min over the ranks of the node's forward + backward time
  rank_spread_ms: {
    name: "rank_spread_ms", label: "time spread over ranks", value: (n) => n.rank_spread_ms ?? NaN, format: formatMs,
  },
  none: { name: "none", label: "nothing (by kind)", value: () => NaN, format: () => "" },
};

/** Menu order; graphwidget/views/payload.py COLOUR_METRICS lists the same names in the same order. */
export const METRIC_ORDER: MetricName[] = ["grad_bytes", "saved_bytes", "peak_bytes", "bwd_ms", "fwd_ms", "output_bytes", "rank_spread_ms", "none"];

export function isMetricName(s: unknown): s is MetricName {
  return typeof s === "string" && s in METRICS;
}

/** Light pages: pale → hot. Chosen so dark text stays readable on the first two thirds and white on the last third. */
export const PALETTE = ["#fff7bc", "#fee391", "#fec44f", "#fe9929", "#ec7014", "#cc4c02", "#993404", "#662506"];
/** Dark pages: dim → bright, so the hot end stands out of the dark background as the pale end does on a light one. */
export const PALETTE_DARK = ["#3b2f24", "#54391f", "#74451a", "#985314", "#c0650f", "#e2821a", "#f6ad3b", "#fde68a"];
export const MISSING_COLOUR = "#e9ecf1";
export const MISSING_COLOUR_DARK = "#30353d";
const MIN_RANGE = 100;

export interface Scale {
  metric: MetricName;
  min: number; // smallest positive value
  max: number;
  /** values at or above are "hot" (outlined); Infinity when nothing stands out */
  hot: number;
  hasData: boolean;
  /** every value is the same (an empty range): drawn in the scale's palest colour, nothing outlined */
  uniform: boolean;
  /** 0..1 position of a value on the scale, NaN for missing */
  t(v: number): number;
  colour(v: number): string;
}

export function makeScale(metric: MetricName, values: ArrayLike<number>): Scale {
  let min = Infinity;
  let max = -Infinity;
  let least = Infinity; // the smallest value, zero included: equal to max when the range is empty
  let any = false;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (!Number.isFinite(v)) continue;
    any = true;
    if (v > 0 && v < min) min = v;
    if (v > max) max = v;
    if (v < least) least = v;
  }
  // One value everywhere: no node costs more than another, so none may look hot (a log scale would put them all at
  // its top). The palest colour, no outline; the legend says "all equal".
  const uniform = any && least === max && metric !== "none";
  if (uniform) {
    const t = (v: number): number => (Number.isFinite(v) ? 0 : NaN);
    return { metric, min: max, max, hot: Infinity, hasData: true, uniform, t, colour: (v) => colourAt(t(v)) };
  }
  if (!any || max <= 0) { min = 1; max = Math.max(max, 1); }
  if (!Number.isFinite(min)) min = max;
  // at least two decades: 32.4 vs 32.6 MiB must not look like pale vs dark
  min = Math.min(min, max / MIN_RANGE);
  const lmin = Math.log(min);
  const span = Math.log(max) - lmin;
  const t = (v: number): number => {
    if (!Number.isFinite(v)) return NaN;
    if (v <= 0) return 0;
    return Math.min(1, Math.max(0, (Math.log(v) - lmin) / span));
  };
  const hot = any ? hotThreshold(values) : Infinity;
  return { metric, min, max, hot, hasData: any && metric !== "none", uniform: false, t, colour: (v) => colourAt(t(v)) };
}

/**
 * "Expensive" = in the top 5 % AND at least a tenth of the maximum AND above the median. The last two stop a flat
 * distribution (every op the same size) from outlining everything.
 */
export function hotThreshold(values: ArrayLike<number>): number {
  let n = 0;
  for (let i = 0; i < values.length; i++) if (Number.isFinite(values[i]) && values[i] > 0) n++;
  if (n === 0) return Infinity;
  const vs = new Float64Array(n); // a typed array sorts numerically, without a comparator call per pair
  n = 0;
  for (let i = 0; i < values.length; i++) if (Number.isFinite(values[i]) && values[i] > 0) vs[n++] = values[i];
  vs.sort();
  const max = vs[vs.length - 1];
  const median = vs[Math.floor((vs.length - 1) / 2)];
  const q95 = vs[Math.min(vs.length - 1, Math.floor(vs.length * 0.95))];
  const thr = Math.max(q95, 0.1 * max);
  if (thr <= median && vs.length > 1) {
    // everything at the top is the median: find the first value strictly above it, if any
    const above = vs.find((v) => v > median && v >= thr);
    return above ?? Infinity;
  }
  return thr;
}

export function colourAt(t: number, dark = false): string {
  const pal = dark ? PALETTE_DARK : PALETTE;
  if (!Number.isFinite(t)) return dark ? MISSING_COLOUR_DARK : MISSING_COLOUR;
  const x = Math.min(1, Math.max(0, t)) * (pal.length - 1);
  const i = Math.min(pal.length - 2, Math.floor(x));
  return mix(pal[i], pal[i + 1], x - i);
}

/** Quantised colour index so the renderer can batch fills into a handful of paths. */
export const BUCKETS = 32;
export function bucketOf(t: number): number {
  if (!Number.isFinite(t)) return -1;
  return Math.min(BUCKETS - 1, Math.max(0, Math.round(t * (BUCKETS - 1))));
}
export const BUCKET_COLOURS: string[] = Array.from({ length: BUCKETS }, (_, i) => colourAt(i / (BUCKETS - 1)));
export const BUCKET_COLOURS_DARK: string[] = Array.from({ length: BUCKETS }, (_, i) => colourAt(i / (BUCKETS - 1), true));

/** The fill of position t on the scale (its bucket), for a light or a dark page; the "no data" grey for NaN. */
export function fillAt(t: number, dark = false): string {
  const b = bucketOf(t);
  if (b < 0) return dark ? MISSING_COLOUR_DARK : MISSING_COLOUR;
  return (dark ? BUCKET_COLOURS_DARK : BUCKET_COLOURS)[b];
}

/** The palette's stops, for the legend's gradient. */
export function paletteOf(dark: boolean): string[] {
  return dark ? PALETTE_DARK : PALETTE;
}

/** Whether label text on the fill at t should be light (the fill is dark): decided by the fill's lightness. */
export function darkFill(t: number, dark = false): boolean {
  return luma(fillAt(t, dark)) < 0.45;
}

/** Relative lightness (0..1) of a #rrggbb colour. */
export function luma(hex: string): number {
  const v = parseInt(hex.slice(1), 16);
  return (((v >> 16) & 255) * 0.299 + ((v >> 8) & 255) * 0.587 + (v & 255) * 0.114) / 255;
}

function mix(a: string, b: string, f: number): string {
  const pa = parseInt(a.slice(1), 16);
  const pb = parseInt(b.slice(1), 16);
  const ch = (p: number, s: number) => (p >> s) & 255;
  const c = (s: number) => Math.round(ch(pa, s) + (ch(pb, s) - ch(pa, s)) * f);
  return `#${((1 << 24) | (c(16) << 16) | (c(8) << 8) | c(0)).toString(16).slice(1)}`;
}

/** Tick values for the legend: min, geometric middle, max. */
export function legendTicks(s: Scale): number[] {
  if (!s.hasData) return [];
  if (s.max <= s.min) return [s.max];
  return [s.min, Math.sqrt(s.min * s.max), s.max];
}
