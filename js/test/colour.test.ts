import { describe, expect, it } from "vitest";
import { colourAt, hotThreshold, makeScale, outputBytes, MISSING_COLOUR, PALETTE, bucketOf, METRICS, METRIC_ORDER } from "../src/model/colour";
import { doc, node } from "./graphs";
import { dtypeBytes, formatBytes, formatMs } from "../src/model/format";
import { normaliseGraph } from "../src/model/decode";

describe("colour scale", () => {
  it("is logarithmic between the smallest positive value and the max", () => {
    const s = makeScale("saved_bytes", [10, 100, 1000, NaN, 0]);
    const narrow = makeScale("saved_bytes", [324, 326]);
    expect(narrow.t(326) - narrow.t(324)).toBeLessThan(0.01); // near-equal values look near-equal
    expect(s.t(10)).toBe(0);
    expect(s.t(100)).toBeCloseTo(0.5);
    expect(s.t(1000)).toBe(1);
    expect(s.t(0)).toBe(0);
    expect(Number.isNaN(s.t(NaN))).toBe(true);
    expect(s.colour(NaN)).toBe(MISSING_COLOUR);
    expect(s.colour(1000)).toBe(PALETTE[PALETTE.length - 1]);
    expect(s.colour(10)).toBe(PALETTE[0]);
  });

  it("is monotonic (darker = more)", () => {
    const lum = (c: string) => { const v = parseInt(c.slice(1), 16); return ((v >> 16) & 255) * 0.3 + ((v >> 8) & 255) * 0.59 + (v & 255) * 0.11; };
    let prev = Infinity;
    for (let t = 0; t <= 1; t += 0.05) { const l = lum(colourAt(t)); expect(l).toBeLessThanOrEqual(prev + 1e-9); prev = l; }
    expect(bucketOf(0)).toBe(0);
    expect(bucketOf(NaN)).toBe(-1);
  });

  it("outlines only the top of a skewed distribution, nothing in a flat one", () => {
    const skewed = [...Array(99).fill(1), 1000];
    const thr = hotThreshold(skewed);
    expect(skewed.filter((v) => v >= thr)).toEqual([1000]);
    expect(hotThreshold(Array(100).fill(5))).toBe(Infinity);
    expect(makeScale("bwd_ms", [NaN, NaN]).hasData).toBe(false);
  });
});

describe("metrics and formatting", () => {
  it("computes output size from shape × dtype size", () => {
    const d = doc([node(0, "X", { outputs: [{ shape: [8, 16], dtype: "float32", device: "cpu" }, { shape: [2], dtype: "int64", device: "cpu" }] })], []);
    expect(outputBytes(d.nodes[0])).toBe(8 * 16 * 4 + 2 * 8);
    expect(Number.isNaN(outputBytes(doc([node(0, "X")], []).nodes[0]))).toBe(true);
    expect(dtypeBytes("bfloat16")).toBe(2);
    expect(dtypeBytes("float8_e4m3fn")).toBe(1);
    expect(dtypeBytes("torch.complex64")).toBe(8);
  });

  it("colours by bytes alive at the peak: 0 is a value (palest), an absent key is no data", () => {
    const d = normaliseGraph({ format: "graphwidget", version: 1, meta: {}, edges: [],
      nodes: [{ id: 0, op: "A", peak_bytes: 4 << 20 }, { id: 1, op: "B", peak_bytes: 0 }, { id: 2, op: "C" }] });
    const v = d.nodes.map((n) => METRICS.peak_bytes.value(n));
    expect(v.slice(0, 2)).toEqual([4 << 20, 0]);
    expect(d.nodes[2].peak_bytes).toBeNull();
    expect(Number.isNaN(v[2])).toBe(true);
    const s = makeScale("peak_bytes", v);
    expect(s.colour(v[0])).toBe(PALETTE[PALETTE.length - 1]);
    expect(s.colour(v[1])).toBe(PALETTE[0]);
    expect(s.colour(v[2])).toBe(MISSING_COLOUR);
    expect(METRICS.peak_bytes.format(v[0])).toBe("4.00 MiB");
    expect(METRIC_ORDER.indexOf("peak_bytes")).toBe(METRIC_ORDER.indexOf("saved_bytes") + 1);
  });

  it("formats bytes and times for people", () => {
    expect(formatBytes(4718592)).toBe("4.50 MiB");
    expect(formatBytes(512)).toBe("512 B");
    expect(formatBytes(null)).toBe("—");
    expect(formatMs(0.0123)).toBe("12.3 µs");
    expect(formatMs(2.5)).toBe("2.50 ms");
  });
});
