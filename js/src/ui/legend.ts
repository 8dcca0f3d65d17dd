/** Colour legend: gradient with min / middle / max ticks, the "no data" swatch and what the outline means. */
import { MISSING_COLOUR, PALETTE, METRICS, legendTicks, type Scale } from "../model/colour";
import { h } from "./dom";

export function renderLegend(el: HTMLElement, s: Scale): void {
  const def = METRICS[s.metric];
  if (s.metric === "none") {
    el.replaceChildren(h("div", { class: "gw-legend-title", text: "Colour: none" }),
      h("div", { class: "gw-legend-note", text: "solid = op, pill = leaf, dashed = custom Function, stacked = group" }));
    return;
  }
  if (!s.hasData) {
    el.replaceChildren(h("div", { class: "gw-legend-title", text: `Colour: ${def.label}` }),
      h("div", { class: "gw-legend-note", text: "no values in this graph" }));
    return;
  }
  const bar = h("div", { class: "gw-legend-bar" });
  bar.style.background = `linear-gradient(to right, ${PALETTE.join(", ")})`;
  const ticks = h("div", { class: "gw-legend-ticks" }, ...legendTicks(s).map((v) => h("span", { text: def.format(v) })));
  const missing = h("span", { class: "gw-legend-swatch" });
  missing.style.background = MISSING_COLOUR;
  const parts: HTMLElement[] = [
    h("div", { class: "gw-legend-title", text: `Colour: ${def.label} (log scale)` }),
    bar, ticks,
    h("div", { class: "gw-legend-note" }, missing, " no data"),
  ];
  if (Number.isFinite(s.hot)) parts.push(h("div", { class: "gw-legend-note" }, h("span", { class: "gw-legend-hot" }), ` thick outline: ≥ ${def.format(s.hot)}`));
  el.replaceChildren(...parts);
}
