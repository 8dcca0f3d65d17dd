import { describe, expect, it } from "vitest";
import { colourAt, darkFill, fillAt, hotThreshold, luma, makeScale, outputBytes, paletteOf, MISSING_COLOUR, MISSING_COLOUR_DARK, PALETTE, bucketOf, METRICS, METRIC_ORDER } from "../src/model/colour";
import { DARK, LIGHT } from "../src/canvas/theme";
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

describe("salience and status on light and dark pages", () => {
  const rgb = (c: string) => { const v = parseInt(c.slice(1), 16); return [(v >> 16) & 255, (v >> 8) & 255, v & 255]; };
  const dist = (a: string, b: string) => { const [x, y] = [rgb(a), rgb(b)]; return Math.hypot(x[0] - y[0], x[1] - y[1], x[2] - y[2]); };

  it("makes the hot end the most salient on either background", () => {
    for (const [dark, bg] of [[false, "#fbfbfc"], [true, "#16181d"]] as [boolean, string][]) {
      let prev = -1;
      for (let t = 0; t <= 1.0001; t += 0.1) {
        const d = dist(colourAt(t, dark), bg);
        expect(d).toBeGreaterThanOrEqual(prev - 1e-9); // further from the page the hotter it is
        prev = d;
      }
      expect(dist(colourAt(1, dark), bg)).toBeGreaterThan(2 * dist(colourAt(0, dark), bg));
    }
    expect(luma(colourAt(1, true))).toBeGreaterThan(luma(colourAt(0, true))); // bright hot end on a dark page
    expect(darkFill(1, true)).toBe(false); // dark text on the bright hot end
    expect(darkFill(1, false)).toBe(true); // white text on the dark hot end
  });

  it("gives the diff status hues the colour scale never uses", () => {
    const hue = (c: string) => {
      const [r, g, b] = rgb(c).map((v) => v / 255);
      const mx = Math.max(r, g, b), mn = Math.min(r, g, b);
      if (mx === mn) return -1;
      const h = mx === r ? ((g - b) / (mx - mn)) % 6 : mx === g ? (b - r) / (mx - mn) + 2 : (r - g) / (mx - mn) + 4;
      return (h * 60 + 360) % 360;
    };
    for (const th of [LIGHT, DARK]) {
      const pal = paletteOf(th.dark).map(hue);
      for (const c of [th.changed, th.added]) for (const p of pal) expect(Math.min(Math.abs(hue(c) - p), 360 - Math.abs(hue(c) - p))).toBeGreaterThan(60);
      // removed is a grey-blue slate: far from the palette's saturation, and never the hot outline's red
      expect(dist(th.removed, th.hot)).toBeGreaterThan(80);
      expect(fillAt(NaN, th.dark)).toBe(th.dark ? MISSING_COLOUR_DARK : MISSING_COLOUR);
    }
  });
});

describe("a uniform field", () => {
  it("is drawn in the palest colour with nothing outlined, and says so", () => {
    const s = makeScale("bwd_ms", Array(50).fill(0.25));
    expect(s.uniform).toBe(true);
    expect(s.hot).toBe(Infinity);
    expect(s.t(0.25)).toBe(0);
    expect(s.colour(0.25)).toBe(PALETTE[0]);
    expect(s.colour(NaN)).toBe(MISSING_COLOUR);
    const one = makeScale("saved_bytes", [4096, NaN]); // one node: not "hot" on its own
    expect(one.uniform).toBe(true);
    expect(one.hot).toBe(Infinity);
    // a real range stays a range, zeros included: 0 vs 8 is not uniform
    expect(makeScale("saved_bytes", [0, 8]).uniform).toBe(false);
    expect(makeScale("saved_bytes", [0, 8]).t(8)).toBe(1);
    expect(makeScale("none", [1, 1]).uniform).toBe(false);
  });
});
