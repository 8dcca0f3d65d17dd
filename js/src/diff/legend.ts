/** The status part of the diff legend: what the outlines and badges mean, with counts. */
import { h } from "../ui/dom";
import { formatCount } from "../model/format";
import type { DiffModel } from "./model";

export function renderStatusLegend(d: DiffModel): HTMLElement {
  const c = d.counts;
  const item = (cls: string, badge: string, text: string) =>
    h("span", { class: "gw-st-item" }, h("span", { class: `gw-st-swatch ${cls}`, text: badge }), text);
  return h("div", { class: "gw-legend-status", attrs: { "data-legend": "status" },
    title: "Outline and badge: changed (solid), added (double: only in B), removed (dashed and hatched: only in A); unchanged nodes are not marked. A closed group holding such nodes has a dashed outline and their number on its badge." },
  item("gw-st-changed", "Δ", `changed ${formatCount(c.changed)}`),
  item("gw-st-added", "+", `added ${formatCount(c.added)}`),
  item("gw-st-removed", "−", `removed ${formatCount(c.removed)}`));
}
