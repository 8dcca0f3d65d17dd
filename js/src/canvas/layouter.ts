/**
 * Layout orchestration for one pane: which groups are open, regrouping the graph into the drawn view for that
 * expansion, asking the layout worker to place it, and dropping results a newer expand or collapse superseded.
 * The laid-out view goes to the pane (`laidOut`), which colours, marks and draws it.
 */
import type { GraphModel } from "../model/graph";
import { DEFAULT_GROUPING, type Cluster, type Hierarchy } from "../model/grouping";
import { buildView, expansionLevels, initialExpansion, viewArea, type ViewGraph } from "../model/view";
import { LayoutClient } from "../layout/client";
import { chooseAlgorithm, fitRoom, LEGIBLE_SCALE, type LayoutInput, type LayoutResult } from "../layout/types";
import type { PaneSize } from "../layout/wrap";
import { viewBounds } from "./geometry";
import { TITLE_FONT, type TextMeasurer } from "./measure";
import type { Anchor } from "./viewport";

export interface Timings { view: number; layout: number; draw: number; algorithm: string; worker: string; }

export interface LayouterHooks {
  /** a relayout started (the drawing is about to change) */
  busy(): void;
  /** a layout failed; the pane keeps what it showed before */
  error(err: unknown): void;
  /** a new view is laid out: the pane shows it (keeping `anchor` in place on screen) */
  laidOut(view: ViewGraph, anchor: Anchor | undefined): Promise<void>;
  /** after every relayout that was drawn */
  changed(): void;
  /** the pane's size, once it has one (the first view is chosen to fit it) */
  size(): Promise<PaneSize>;
  /** the pane's size now (0 × 0 before it is laid out) */
  currentSize(): PaneSize;
}

export class Layouter {
  /** the open groups */
  expanded: Set<Cluster>;
  /** groups opened one by one (a click, the API): drawn with a frame even when they are chains or fan-ins */
  private opened = new Set<Cluster>();
  private seq = 0;
  /** relayouts asked for and relayouts finished (drawn, superseded or failed) */
  private started = 0;
  private finished = 0;
  private running: Promise<void> = Promise.resolve();
  /** the first layout picks how far the graph opens (see opening()) */
  private first = true;

  /**
   * `timings`: where the last relayout's times go (the pane's, shown in the status bar and the automation API);
   * `client`: a layout worker started early (while the data decodes), else the pane starts its own.
   */
  constructor(private model: GraphModel, private hier: Hierarchy, private measurer: TextMeasurer, private hooks: LayouterHooks,
    private timings: Timings, private client: LayoutClient = new LayoutClient()) {
    this.expanded = initialExpansion(model, hier);
  }

  /** Rebuilds the view for `expanded`, lays it out in the worker, hands it over. */
  relayout(anchor?: Anchor): Promise<void> {
    const seq = ++this.seq;
    this.started++;
    this.hooks.busy();
    let counted = false;
    const finish = () => { if (!counted) { counted = true; this.finished++; } };
    const run = () => this.layoutOnce(seq, finish, anchor).catch((err) => { finish(); this.hooks.error(err); });
    this.running = this.running.then(run, run);
    return this.running;
  }

  /** True while a relayout is queued or running. */
  get busy(): boolean {
    return this.started !== this.finished;
  }

  /** Resolves when the latest relayout has been drawn. */
  idle(): Promise<void> {
    return this.running;
  }

  /** Marks a group open (one the user opened: it gets a frame); false if it already was. */
  open(c: Cluster): boolean {
    if (this.expanded.has(c)) return false;
    this.expanded.add(c);
    this.opened.add(c);
    return true;
  }

  /** Marks a group closed; false if it was not open. */
  close(c: Cluster): boolean {
    return this.expanded.delete(c);
  }

  /** Opens every group enclosing node i; false if none was closed. */
  reveal(i: number): boolean {
    const hidden = this.hier.ancestors(i).filter((c) => !this.expanded.has(c));
    hidden.forEach((c) => this.expanded.add(c));
    return hidden.length > 0;
  }

  dispose(): void {
    this.client.dispose();
  }

  /** The drawn view for a set of open groups. */
  private build(expanded: Set<Cluster>): ViewGraph {
    return buildView(this.model, this.hier, expanded, this.measurer.box, (t) => this.measurer.width(`▾ ${t} · 000.0 KiB`, TITLE_FONT),
      (c) => (c.kind === "chain" || c.kind === "fanin") && !this.opened.has(c));
  }

  private async layoutOnce(seq: number, finish: () => void, anchor?: Anchor): Promise<void> {
    const t0 = performance.now();
    let view: ViewGraph, res: LayoutResult, input: LayoutInput, tView: number;
    if (this.first) {
      this.first = false;
      const got = await this.opening(seq);
      if (!got) { finish(); return; }
      ({ view, res, input, tView } = got);
    } else {
      view = this.build(this.expanded);
      input = layoutInput(view, this.hooks.currentSize());
      tView = performance.now() - t0;
      res = await this.client.layout(input);
      if (seq !== this.seq) { finish(); return; } // superseded by a newer expand/collapse
      place(view, res);
    }
    this.timings.view = tView;
    this.timings.layout = performance.now() - t0 - tView;
    this.timings.algorithm = res.algorithm || chooseAlgorithm(input);
    this.timings.worker = this.client.mode;
    await this.hooks.laidOut(view, anchor);
    finish();
    this.hooks.changed();
  }

  /**
   * The first view: the most open expansion level (model/view.ts expansionLevels) whose drawing fits the pane at a
   * legible zoom, so the whole model is on screen and readable; the top level when even that does not fit. Levels
   * are tried from the top down and a level that cannot fit by its area alone is not laid out.
   */
  private async opening(seq: number): Promise<{ view: ViewGraph; res: LayoutResult; input: LayoutInput; tView: number } | null> {
    const size = await this.hooks.size();
    const levels = expansionLevels(this.model, this.hier);
    // a small graph opens flat, everything drawn, when that fits (DEFAULT_GROUPING.flatUpTo); else it opens as any
    // other: the levels from the top down
    const flatFirst = this.model.n <= DEFAULT_GROUPING.flatUpTo && levels.length > 1;
    if (flatFirst) levels.unshift(levels.pop()!);
    let best: { view: ViewGraph; res: LayoutResult; input: LayoutInput; tView: number; set: Set<Cluster> } | null = null;
    let tView = 0;
    for (let k = 0; k < levels.length; k++) {
      const t = performance.now();
      // a level that cannot fit by the area of its boxes is not built (building walks the whole graph)
      if (best && best.view.items.length >= 3 && viewArea(this.model, levels[k], this.hier.root, this.measurer.box) > room(size)) break;
      const view = this.build(levels[k]);
      tView += performance.now() - t;
      const input = layoutInput(view, size);
      const res = await this.client.layout(input);
      if (seq !== this.seq) return null;
      place(view, res);
      const ok = fitsLegibly(view, size);
      if (flatFirst && k === 0) {
        if (ok) { best = { view, res, input, tView, set: levels[k] }; break; }
        continue;
      }
      // one or two boxes say nothing of the model (GPT-2: `transformer` and `lm_head`, with the tied weight and an
      // alias beside them): then the next level is taken, fitted, even if it is small
      const bare = !!best && saysLittle(best.view, this.model.n);
      if (!best || ok || bare) best = { view, res, input, tView, set: levels[k] };
      if (!ok) break;
    }
    this.expanded = best!.set;
    return { ...best!, tView };
  }
}

/** A view of at most two closed groups that hold nearly the whole graph (what is drawn beside them is a few loose
 * nodes) and no fold: it names the model's parts, not what they are. A fold ("h.0–11 · GPT2Block ×12") is already
 * the summary. */
export function saysLittle(view: ViewGraph, n: number): boolean {
  if (view.items.length < 3) return true;
  let groups = 0, held = 0;
  for (const it of view.items) {
    if (!it.cluster) continue;
    if (it.cluster.kind === "repeat") return false;
    groups++;
    held += it.cluster.size;
  }
  return groups > 0 && groups <= 2 && held >= 0.9 * n;
}

/** The area, in world units, that a pane shows at a legible zoom (what a view's boxes must fit in). */
export function room(size: PaneSize): number {
  const r = fitRoom(size.w, size.h);
  return (Math.max(r.w, 1) * Math.max(r.h, 1)) / (LEGIBLE_SCALE * LEGIBLE_SCALE);
}

/** Whether a laid-out view fits the pane whole at a zoom where its labels are legible. */
export function fitsLegibly(view: ViewGraph, size: PaneSize): boolean {
  const b = viewBounds(view);
  if (!b) return true;
  const r = fitRoom(size.w, size.h);
  const s = Math.min(r.w / Math.max(b[2] - b[0], 1), r.h / Math.max(b[3] - b[1], 1));
  return s >= LEGIBLE_SCALE;
}

/**
 * What the layout needs of a view: box sizes, edges and, when groups are open, the frames. One pass over the items
 * and one over the edges: on an expand-all of a big graph this runs on the main thread before the worker starts.
 */
export function layoutInput(view: ViewGraph, pane?: PaneSize): LayoutInput {
  const { items, edges, frames } = view;
  const n = items.length, m = edges.length, nf = frames.length;
  const w = new Float64Array(n), h = new Float64Array(n);
  const owner = nf ? new Int32Array(n) : null;
  for (let i = 0; i < n; i++) {
    const it = items[i];
    w[i] = it.w;
    h[i] = it.h;
    if (owner) owner[i] = it.frame;
  }
  const src = new Int32Array(m), dst = new Int32Array(m);
  for (let k = 0; k < m; k++) {
    src[k] = edges[k].s;
    dst[k] = edges[k].t;
  }
  const input: LayoutInput = { w, h, src, dst };
  if (pane && pane.w > 0 && pane.h > 0) input.pane = { w: pane.w, h: pane.h };
  if (owner) {
    const fparent = new Int32Array(nf), fminw = new Float64Array(nf);
    for (let f = 0; f < nf; f++) {
      fparent[f] = frames[f].parent;
      fminw[f] = frames[f].minW;
    }
    input.owner = owner;
    input.fparent = fparent;
    input.fminw = fminw;
  }
  return input;
}

/** Writes a layout's positions, frame boxes and edge routes into the view. */
export function place(view: ViewGraph, res: LayoutResult): void {
  for (let i = 0; i < view.items.length; i++) { view.items[i].x = res.x[i]; view.items[i].y = res.y[i]; }
  if (res.fx) view.frames.forEach((f, k) => { f.x = res.fx![k]; f.y = res.fy![k]; f.w = res.fw![k]; f.h = res.fh![k]; });
  view.edges.forEach((e, k) => { e.points = res.pts.slice(res.ptOff[k], res.ptOff[k + 1]); });
}
