/**
 * A pane's colours: the colour metric's value per node, the scale (usually shared with the other panes, so equal
 * colours mean equal values), each drawn item's place on it, and the cost written on group boxes and frame titles.
 */
import type { GraphModel } from "../model/graph";
import { makeScale, METRICS, type MetricName, type Scale } from "../model/colour";
import { sumByItem } from "../model/view";
import { SUB_FONT, TITLE_FONT, type TextMeasurer } from "./measure";
import { fillOf, type Paint } from "./render";

export class Colouring {
  metric: MetricName = "saved_bytes";
  scale: Scale;
  /** per node: the value of the colour metric (NaN = none) */
  readonly values: Float64Array;

  /**
   * `shared`: the owner computes the scale shared by all its panes and calls applyScale (without it the pane scales
   * its own values); `coloured`: the paint's colours changed.
   */
  constructor(private model: GraphModel, private measurer: TextMeasurer, private paint: () => Paint | null,
    private shared: (() => void) | undefined, private coloured: (p: Paint) => void) {
    this.values = new Float64Array(model.n).fill(NaN);
    this.scale = makeScale("none", this.values);
  }

  /** Sets the metric's per-node values; the colours follow through recolour (the owner's shared scale), unless the
   * owner recolours itself once it has set every pane. */
  setMetric(metric: MetricName, recolour = true): void {
    this.metric = metric;
    const def = METRICS[metric];
    for (let i = 0; i < this.model.n; i++) this.values[i] = def.value(this.model.nodes[i]);
    if (recolour) this.recolour();
  }

  /** The drawn items changed: the colours follow (on the shared scale when there is one). */
  recolour(): void {
    if (this.shared) this.shared();
    else this.applyScale(this.ownScale());
  }

  /**
   * The metric per drawn item: a node's value, a group's sum over its members (a group's saved bytes are its
   * nodes' saved bytes); null before the first layout.
   */
  itemSums(): Float64Array | null {
    const p = this.paint();
    return p ? sumByItem(p.view.rep, p.view.items.length, this.values) : null;
  }

  /** This pane's scale alone: over the group sums when groups are drawn, or every group would be "hot". */
  ownScale(): Scale {
    const sums = this.itemSums();
    const p = this.paint();
    const groups = !!p && p.view.items.some((it) => it.cluster);
    return groups && sums && this.metric !== "none" ? makeScale(this.metric, sums) : makeScale(this.metric, this.values);
  }

  /** Colours the drawn items on `scale` (possibly shared with other panes). */
  applyScale(scale: Scale): void {
    this.scale = scale;
    const p = this.paint();
    if (!p) return;
    const sums = this.itemSums()!;
    const none = this.metric === "none";
    for (let k = 0; k < sums.length; k++) {
      p.t[k] = none ? NaN : scale.t(sums[k]);
      p.hot[k] = !none && sums[k] >= scale.hot ? 1 : 0;
    }
    this.costLabels(p, sums);
    this.coloured(p);
  }

  /** The fill colour of a drawn item (the shared colour scale; `dark`: the dark page's palette), or null if it is
   * not drawn. */
  itemColour(i: number, dark = false): string | null {
    const p = this.paint();
    return p && i >= 0 && i < p.t.length ? fillOf(p.t[i], dark) : null;
  }

  /**
   * A group's cost in the colour metric goes on its box ("module · 49 ops · 1.2 MiB") and on its frame's title
   * when it is open, so the first view of a model says where the cost is before anything is clicked.
   */
  private costLabels(p: Paint, sums: Float64Array): void {
    const v = p.view;
    const def = METRICS[this.metric];
    const none = this.metric === "none";
    const cost = (x: number) => (none || !Number.isFinite(x) ? "" : def.format(x));
    v.items.forEach((it, k) => {
      if (!it.cluster) return;
      const c = cost(sums[k]);
      p.sub[k] = c ? this.measurer.fit(`${it.sublabel} · ${c}`, SUB_FONT, it.w - 20 - 18) : it.ds;
    });
    if (!v.frames.length) return;
    const fsum = new Float64Array(v.frames.length).fill(NaN);
    v.items.forEach((it, k) => {
      if (!Number.isFinite(sums[k])) return;
      for (let f = it.frame; f >= 0; f = v.frames[f].parent) fsum[f] = Number.isNaN(fsum[f]) ? sums[k] : fsum[f] + sums[k];
    });
    v.frames.forEach((fr, f) => {
      const c = cost(fsum[f]);
      p.ft[f] = none ? NaN : this.scale.t(fsum[f]);
      p.ftitle[f] = this.measurer.fit(`▾ ${fr.title}${c ? ` · ${c}` : ""}`, TITLE_FONT, fr.w - 16);
    });
    p.fitted.clear();
  }
}
