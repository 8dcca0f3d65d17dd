/** The short text shown on hover (pointer.ts). Plain strings: the pane puts them in with textContent. */
import type { GraphModel } from "../model/graph";
import type { Hierarchy } from "../model/grouping";
import { formatBytes, formatMs, formatShape, formatCount } from "../model/format";
import { METRICS, type MetricName } from "../model/colour";
import type { ViewEdge, ViewFrame, ViewGraph, ViewItem } from "../model/view";

export const tooltipLines = {
  item(model: GraphModel, hier: Hierarchy, it: ViewItem, values: Float64Array, metric: MetricName): string[] {
    if (it.cluster) {
      const c = it.cluster;
      let saved = 0, bwd = 0, hasBwd = false, metricSum = 0, hasMetric = false;
      hier.forEachMember(c, (i) => {
        const n = model.nodes[i];
        saved += n.saved_bytes || 0;
        if (n.bwd_ms !== null) { bwd += n.bwd_ms; hasBwd = true; }
        if (Number.isFinite(values[i])) { metricSum += values[i]; hasMetric = true; }
      });
      const lines = [it.label, `${c.kind === "module" ? `module ${c.path}` : c.kind === "range" ? "block" : c.kind} · ${formatCount(c.size)} ops`, `saved ${formatBytes(saved)}`];
      if (hasBwd) lines.push(`backward ${formatMs(bwd)}`);
      if (hasMetric && metric !== "saved_bytes" && metric !== "bwd_ms" && metric !== "none") lines.push(`${METRICS[metric].label} ${METRICS[metric].format(metricSum)}`);
      lines.push("click to expand");
      return lines;
    }
    const n = model.nodes[it.node];
    const lines = [`${n.op}  #${n.id}`, n.kind];
    if (n.module) lines.push(`module ${n.module}`);
    if (n.source) lines.push(n.source);
    const o = n.outputs?.[0];
    if (o?.shape) lines.push(`out ${formatShape(o.shape)} ${o.dtype ?? ""}`.trim());
    if (n.kind === "leaf" && n.tensor?.shape) lines.push(`tensor ${formatShape(n.tensor.shape)} ${n.tensor.dtype ?? ""}`.trim());
    if (n.saved.length) lines.push(`saved ${formatBytes(n.saved_bytes)} in ${n.saved.length} tensor${n.saved.length > 1 ? "s" : ""}`);
    if (n.fwd_ms !== null) lines.push(`forward ${formatMs(n.fwd_ms)}`);
    if (n.bwd_ms !== null) lines.push(`backward ${formatMs(n.bwd_ms)}`);
    if (n.peak_bytes !== null && n.peak_bytes !== undefined) lines.push(`alive at the peak ${formatBytes(n.peak_bytes)}`);
    if (typeof n.rank_spread_ms === "number") lines.push(`spread over ranks ${formatMs(n.rank_spread_ms)}`);
    return lines;
  },

  /** An open group's frame title. */
  frame(model: GraphModel, hier: Hierarchy, f: ViewFrame, values: Float64Array, metric: MetricName): string[] {
    const c = f.cluster;
    let sum = 0, has = false;
    hier.forEachMember(c, (i) => { if (Number.isFinite(values[i])) { sum += values[i]; has = true; } });
    const lines = [c.kind === "module" && c.path ? c.path : f.title, `${c.kind === "range" ? "block" : c.kind} · ${formatCount(c.size)} ops`];
    if (has && metric !== "none") lines.push(`${METRICS[metric].label} ${METRICS[metric].format(sum)}`);
    lines.push("click the title to collapse");
    return lines;
  },

  edge(model: GraphModel, e: ViewEdge, view: ViewGraph): string[] {
    const ge = model.edges[e.edge];
    const name = (k: number) => view.items[k].label;
    const head = ge.shape ? `${formatShape(ge.shape)} ${ge.dtype ?? ""}`.trim() : "tensor shape unknown";
    const lines = [head, `${name(e.s)} → ${name(e.t)}`];
    if (e.count > 1) lines.push(`${formatCount(e.count)} tensors (first shown)`);
    return lines;
  },
};
