import { describe, expect, it } from "vitest";
import { Camera, MAX_SCALE, type CameraChange } from "../src/canvas/camera";
import { fitClear, readableCamera, viewBounds } from "../src/canvas/geometry";
import { CONTROLS_H, CONTROLS_W } from "../src/layout/types";
import type { ViewGraph } from "../src/model/view";

describe("Camera", () => {
  it("announces changes with their reason, and nothing when nothing changed", () => {
    const c = new Camera();
    const seen: CameraChange[] = [];
    const f = (ch: CameraChange) => seen.push(ch);
    c.on("change", f);
    c.pan(10, 5);
    c.zoomAt(2, 0, 0);
    c.set(c.s, c.tx, c.ty);
    expect(seen.map((x) => x.reason)).toEqual(["pan", "zoom"]);
    expect(seen[0].before).toEqual({ s: 1, tx: 0, ty: 0 });
    expect(seen[0].after).toEqual({ s: 1, tx: 10, ty: 5 });
    c.off("change", f);
    c.pan(1, 1);
    expect(seen).toHaveLength(2);
  });

  it("zooms about a screen point and clamps the scale", () => {
    const c = new Camera();
    c.set(1, 100, 50);
    const [wx, wy] = c.toWorld(300, 200);
    c.zoomAt(3, 300, 200);
    expect(c.toScreen(wx, wy)).toEqual([300, 200]);
    c.zoomAt(1e6, 0, 0);
    expect(c.s).toBe(MAX_SCALE);
  });

  it("fits bounds into a viewport and centres on a point", () => {
    const fit = Camera.fitBounds([0, 0, 1000, 500], 548, 548, 24);
    expect(fit.s).toBeCloseTo(0.5);
    // a wider right border (the zoom buttons'): the drawing is centred in what is left
    const clear = Camera.fitBounds([0, 0, 1000, 500], 568, 548, 24, 1.25, 44);
    expect(clear.s).toBeCloseTo(0.5);
    expect(clear.tx + 1000 * clear.s).toBeCloseTo(568 - 44);
    expect(clear.tx).toBeCloseTo(24);
    const c = new Camera();
    c.fit([0, 0, 1000, 500], 548, 548, 24);
    expect(c.toScreen(500, 250)).toEqual([274, 274]);
    c.centreOn(10, 20, 200, 100, 2);
    expect(c.toScreen(10, 20)).toEqual([100, 50]);
  });

  it("follow applies the same screen-space pan and zoom, keeping its own offset", () => {
    const a = new Camera(), b = new Camera();
    a.set(1, 0, 0);
    b.set(0.5, 40, -30);
    const pb = b.toWorld(120, 80);
    a.on("change", (ch) => b.follow(ch));
    a.pan(15, -5);
    expect(b.state).toEqual({ s: 0.5, tx: 55, ty: -35 });
    const pa = a.toWorld(200, 100);
    const q = b.toScreen(pb[0], pb[1]);
    a.zoomAt(2, 200, 100);
    expect(a.toScreen(pa[0], pa[1])).toEqual([200, 100]);
    expect(b.s).toBeCloseTo(1);
    // b's world point that was at screen q moved the way a's screen points did: about (200, 100), factor 2
    const q2 = b.toScreen(pb[0], pb[1]);
    expect(q2[0]).toBeCloseTo(200 + (q[0] - 200) * 2);
    expect(q2[1]).toBeCloseTo(100 + (q[1] - 100) * 2);
  });
});

describe("viewBounds", () => {
  it("holds the edges' routes too, so fitting keeps a route that leaves the boxes' area on screen", () => {
    const item = (x: number, y: number) => ({ x, y, w: 20, h: 10 });
    // two columns of a wrapped drawing: the edge between them runs above both
    const v = {
      items: [item(0, 0), item(100, 0)], frames: [],
      edges: [{ s: 0, t: 1, count: 1, edge: 0, points: Float32Array.from([0, 5, 0, 30, 50, 30, 50, -40, 100, -40, 100, -5]) }],
    } as unknown as ViewGraph;
    expect(viewBounds(v)).toEqual([-10, -40, 110, 30]);
  });
});

describe("fitting keeps clear of the zoom buttons", () => {
  const view = (items: [number, number, number, number][]) =>
    ({ items: items.map(([x, y, w, h]) => ({ x, y, w, h })), frames: [], edges: [] }) as unknown as ViewGraph;
  const under = (v: ViewGraph, c: { s: number; tx: number; ty: number }, w: number) => v.items.some((it) =>
    (it.x + it.w / 2) * c.s + c.tx > w - CONTROLS_W && (it.y - it.h / 2) * c.s + c.ty < CONTROLS_H);
  it("keeps the plain fit when nothing is under them", () => {
    const v = view([[50, 20, 100, 40], [50, 400, 100, 40]]);
    expect(fitClear(v, viewBounds(v)!, 600, 600)).toEqual(Camera.fitBounds(viewBounds(v)!, 600, 600));
  });
  it("moves a drawing with room below it down, one with room beside it left, else fits it narrower", () => {
    // wide and flat: room below
    const flat = view([[0, 0, 100, 40], [900, 0, 100, 40]]);
    const a = fitClear(flat, viewBounds(flat)!, 600, 600);
    expect(under(flat, a, 600)).toBe(false);
    expect(a.s).toBeCloseTo(Camera.fitBounds(viewBounds(flat)!, 600, 600).s);
    // tall and thin, its top item on the right: room to the left
    const tall = view([[100, 0, 100, 40], [0, 900, 100, 40]]);
    const b = fitClear(tall, viewBounds(tall)!, 600, 600);
    expect(under(tall, b, 600)).toBe(false);
    expect(b.s).toBeCloseTo(Camera.fitBounds(viewBounds(tall)!, 600, 600).s);
    // fills the pane both ways: fitted again, narrower
    const full = view([[0, 0, 100, 40], [500, 0, 100, 40], [0, 500, 100, 40], [500, 500, 100, 40]]);
    const c = fitClear(full, viewBounds(full)!, 600, 600);
    expect(under(full, c, 600)).toBe(false);
    expect(c.s).toBeLessThan(Camera.fitBounds(viewBounds(full)!, 600, 600).s);
  });
});

describe("a tall drawing opens readable at its top, below the pane's title", () => {
  // a column far too tall to fit legibly: the camera starts at its top
  const items = Array.from({ length: 200 }, (_, k) => ({ x: 0, y: k * 60, w: 120, h: 30 }));
  const v = { items, frames: [], edges: [] } as unknown as ViewGraph;
  const topOf = (c: { s: number; ty: number }) => (items[0].y - items[0].h / 2) * c.s + c.ty;
  const leftOf = (c: { s: number; tx: number }) => (items[0].x - items[0].w / 2) * c.s + c.tx;
  it("starts just under the top without a title", () => {
    const c = readableCamera(v, viewBounds(v)!, 600, 400);
    expect(c.s).toBeGreaterThanOrEqual(0.5);
    expect(topOf(c)).toBeCloseTo(24);
  });
  it("starts below a two-line title that reaches over the drawing, and ignores one that ends before it", () => {
    const wide = { w: 400, h: 44 };  // a two-line title across most of the pane
    const c = readableCamera(v, viewBounds(v)!, 600, 400, undefined, wide);
    expect(leftOf(c)).toBeLessThan(wide.w);
    expect(topOf(c)).toBeGreaterThanOrEqual(wide.h);
    const narrow = { w: 100, h: 44 };  // the drawing is centred, its left edge right of this title
    const d = readableCamera(v, viewBounds(v)!, 600, 400, undefined, narrow);
    expect(leftOf(d)).toBeGreaterThan(narrow.w);
    expect(topOf(d)).toBeCloseTo(24);
  });
});
