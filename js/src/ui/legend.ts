/**
 * Colour legend: one line in a strip under the graph (never over it): the metric, min ▬▬ max on the log scale
 * (the middle value on hover), the "no data" swatch and what the thick outline means. Its title folds it to that
 * title alone; the diff view and the findings add their parts after it.
 */
import { MISSING_COLOUR, MISSING_COLOUR_DARK, METRICS, legendTicks, paletteOf, type Scale } from "../model/colour";
import { pickTheme } from "../canvas/theme";
import { h } from "./dom";

const FOLDED = "gw-legend-folded";

export function renderLegend(el: HTMLElement, s: Scale): void {
  const def = METRICS[s.metric];
  const folded = el.classList.contains(FOLDED);
  const title = (text: string) => h("button", {
    class: "gw-legend-title", text, title: folded ? "Show the legend" : "Fold the legend",
    attrs: { type: "button", "aria-expanded": String(!folded), "data-action": "legend" },
    on: { click: () => { el.classList.toggle(FOLDED); renderLegend(el, s); } },
  });
  if (s.metric === "none") {
    el.replaceChildren(title("Colour: none"),
      h("span", { class: "gw-legend-note", text: "solid = op, pill = leaf, dashed = custom Function, stacked = group, framed = open group" }));
    return;
  }
  if (!s.hasData) {
    el.replaceChildren(title(`Colour: ${def.label}`), h("span", { class: "gw-legend-note", text: "no values in this graph" }));
    return;
  }
  if (s.uniform) {
    el.replaceChildren(title(`Colour: ${def.label}`),
      h("span", { class: "gw-legend-note", text: `all equal: ${def.format(s.max)} (nothing stands out)` }));
    return;
  }
  const ticks = legendTicks(s).map((v) => def.format(v));
  const bar = h("span", { class: "gw-legend-bar", title: ticks.length === 3 ? `log scale: ${ticks[0]} · ${ticks[1]} · ${ticks[2]}` : "" });
  // the canvas's own palette: reversed in lightness on a dark page, so the hot end is the salient one there too
  const dark = pickTheme(el).dark;
  bar.style.background = `linear-gradient(to right, ${paletteOf(dark).join(", ")})`;
  const missing = h("span", { class: "gw-legend-swatch" });
  missing.style.background = dark ? MISSING_COLOUR_DARK : MISSING_COLOUR;
  const parts: HTMLElement[] = [
    title(`Colour: ${def.label} (log)`),
    h("span", { class: "gw-legend-scale" }, h("span", { class: "gw-legend-tick", text: ticks[0] }), bar,
      ticks.length === 3 ? h("span", { class: "gw-legend-tick gw-legend-mid", text: ticks[1] }) : null,
      h("span", { class: "gw-legend-tick", text: ticks[ticks.length - 1] })),
    h("span", { class: "gw-legend-note" }, missing, " no data"),
  ];
  if (def.note) parts.splice(2, 0, h("span", { class: "gw-legend-note gw-legend-what", text: def.note }));
  if (Number.isFinite(s.hot)) parts.push(h("span", { class: "gw-legend-note" }, h("span", { class: "gw-legend-hot" }), ` ≥ ${def.format(s.hot)}`));
  el.replaceChildren(...parts);
}
