/**
 * One pane as SVG: the pane's own drawing code (canvas/render.ts, labels, badges) run against svgcanvas's 2D context
 * instead of the canvas, so the picture is what the pane draws, not a second renderer that could drift from it.
 * Each item's fill carries `data-node-id` (a node) or `data-group-id` (a closed group), so a picture can be checked
 * against the view.
 */
import { Context } from "svgcanvas";
import type { GraphPane } from "../canvas/pane";
import { compactPath } from "./path";

const SVG_NS = "http://www.w3.org/2000/svg";

/** The pane's current view (camera, size, theme, marks) as an <svg> element of its size in CSS pixels, or null
 * before the first layout. `idOf` names drawn item `i`: a node id (number) or a group id (string). */
export function paneSvg(pane: GraphPane, idOf: (item: number) => number | string): SVGSVGElement | null {
  const w = pane.surface.width, h = pane.surface.height;
  if (!pane.view || w <= 0 || h <= 0) return null;
  const ctx = new Context({ width: w, height: h, document });
  const tag = (item: number) => {
    const el = ctx.__currentElement;
    const id = idOf(item);
    el.setAttribute(typeof id === "number" ? "data-node-id" : "data-group-id", String(id));
  };
  if (!pane.render(ctx as unknown as CanvasRenderingContext2D, w, h, 1, tag)) return null;
  const svg = ctx.getSvg();
  compact(svg);
  return svg;
}

const GEOMETRY = ["d", "x", "y", "width", "height", "transform", "cx", "cy", "r", "rx", "ry", "x1", "x2", "y1", "y2", "stroke-width", "stroke-dasharray"];
const NUMBER = /-?\d*\.\d+(?:e-?\d+)?/g;

/** Attribute values that say what SVG does anyway (svgcanvas writes every one on every element). */
const DEFAULTS: Record<string, string[]> = {
  "font-style": ["normal", ""], "font-weight": ["normal", "400", ""], "text-decoration": ["none", ""],
  "dominant-baseline": ["alphabetic", "auto", ""], "text-anchor": ["start", ""], "paint-order": ["stroke fill markers", "fill stroke markers"],
};

/** A tenth of a CSS pixel is below what a screen shows: geometry attributes lose their float noise, attributes that
 * repeat the default or the root's font go, paths lose their empty segments ({@link compactPath}); text content is
 * never touched. svgcanvas's empty <defs> and groups go too. */
export function compact(root: Element, font?: string): void {
  for (const el of [root, ...root.querySelectorAll("*")]) {
    for (const a of GEOMETRY) {
      const v = el.getAttribute(a);
      if (v && v.includes(".")) el.setAttribute(a, v.replace(NUMBER, (n) => String(Math.round(parseFloat(n) * 10) / 10)));
    }
    const d = el.localName === "path" ? el.getAttribute("d") : null;
    if (d) el.setAttribute("d", compactPath(d));
    for (const [a, values] of Object.entries(DEFAULTS)) {
      const v = el.getAttribute(a);
      if (v !== null && values.includes(v)) el.removeAttribute(a);
    }
    if (font && el !== root && el.getAttribute("font-family")?.replace(/\s/g, "") === font.replace(/\s/g, "")) el.removeAttribute("font-family");
  }
  for (const el of [...root.querySelectorAll("defs, g")].reverse()) {
    if (!el.childNodes.length && !el.attributes.length) el.remove();
    else if (el.localName === "g" && !el.childNodes.length) el.remove();
  }
}

export { SVG_NS };
