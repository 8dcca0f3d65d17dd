/**
 * A picture of the view as it is on screen: the panes (each drawn by its own code, svg-pane.ts) at their places, with
 * their titles, and the strips around them (the diff's summary sentence, the legend) — not the toolbar, the side
 * panel or the zoom buttons. One SVG; the PNG is that SVG rasterised, so the two never differ.
 */
import type { GraphPane } from "../canvas/pane";
import { paneSvg, SVG_NS, compact } from "./svg-pane";
import { beginPicture, domToSvg } from "./dom-svg";
import { FONT_FAMILY } from "../canvas/measure";

export interface PicturePane { pane: GraphPane; idOf(item: number): number | string; }

export interface PictureParts {
  panes: PicturePane[];
  /** strips drawn as laid out (summary, legend), in any order */
  strips: Element[];
  /** the picture's background (the canvas's) */
  background: string;
  /** the <title> of the SVG */
  title: string;
}

/** The picture as an <svg> element, and its size in CSS pixels. */
export function composeSvg(parts: PictureParts): { svg: SVGSVGElement; width: number; height: number } {
  const boxes = [...parts.panes.map((p) => p.pane.el.getBoundingClientRect()),
    ...parts.strips.filter((e) => e.getClientRects().length).map((e) => e.getBoundingClientRect())].filter((r) => r.width > 0 && r.height > 0);
  const left = Math.min(...boxes.map((r) => r.left)), top = Math.min(...boxes.map((r) => r.top));
  const width = Math.ceil(Math.max(...boxes.map((r) => r.right)) - left), height = Math.ceil(Math.max(...boxes.map((r) => r.bottom)) - top);
  const o = { left, top };
  beginPicture();
  const svg = document.createElementNS(SVG_NS, "svg");
  svg.setAttribute("xmlns", SVG_NS);
  svg.setAttribute("width", String(width));
  svg.setAttribute("height", String(height));
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("font-family", FONT_FAMILY);
  const title = document.createElementNS(SVG_NS, "title");
  title.textContent = parts.title;
  const defs = document.createElementNS(SVG_NS, "defs");
  const bg = document.createElementNS(SVG_NS, "rect");
  bg.setAttribute("width", "100%");
  bg.setAttribute("height", "100%");
  bg.setAttribute("fill", parts.background);
  svg.append(title, defs, bg);
  parts.panes.forEach((p, k) => {
    const r = p.pane.canvas.getBoundingClientRect();
    const drawn = paneSvg(p.pane, p.idOf);
    if (!drawn) return;
    // a nested <svg> clips the pane to its box, as the canvas does
    const holder = document.createElementNS(SVG_NS, "svg");
    for (const [a, v] of [["x", r.left - left], ["y", r.top - top], ["width", drawn.getAttribute("width") ?? r.width],
      ["height", drawn.getAttribute("height") ?? r.height], ["overflow", "hidden"], ["data-pane", k]] as const) holder.setAttribute(a, String(v));
    holder.append(...drawn.childNodes);
    svg.appendChild(holder);
    const t = p.pane.el.querySelector(".gw-pane-title");
    if (t) domToSvg(t, o, svg, defs);
  });
  for (const s of parts.strips) domToSvg(s, o, svg, defs);
  compact(svg, FONT_FAMILY);
  if (!defs.childNodes.length) defs.remove();
  return { svg, width, height };
}

/** The picture as an SVG file's text. */
export function svgText(parts: PictureParts): string {
  return '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(composeSvg(parts).svg);
}

/** The picture as PNG, `scale` device pixels per CSS pixel (2: crisp in a pull request on a high-density screen). */
export async function pngBlob(parts: PictureParts, scale = 2): Promise<Blob> {
  const { svg, width, height } = composeSvg(parts);
  const text = new XMLSerializer().serializeToString(svg);
  const url = URL.createObjectURL(new Blob([text], { type: "image/svg+xml" }));
  try {
    const img = new Image();
    img.decoding = "sync";
    await new Promise<void>((res, rej) => { img.onload = () => res(); img.onerror = () => rej(new Error("the picture could not be rasterised")); img.src = url; });
    const c = document.createElement("canvas");
    c.width = Math.round(width * scale);
    c.height = Math.round(height * scale);
    const ctx = c.getContext("2d")!;
    ctx.scale(scale, scale);
    ctx.drawImage(img, 0, 0, width, height);
    return await new Promise<Blob>((res, rej) => c.toBlob((b) => (b ? res(b) : rej(new Error("the PNG could not be written"))), "image/png"));
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** Offers `blob` as a download named `name` (an <a download> click: no server, no network). */
export function download(blob: Blob, name: string, host: Element): void {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  a.hidden = true;
  host.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 60_000);
}

/** A file name from a title: letters, digits, dot, dash and underscore, at most 60 of them. */
export function fileName(title: string, ext: "svg" | "png"): string {
  const stem = title.replace(/[^\w.-]+/g, "_").replace(/^_+|_+$/g, "").slice(0, 60) || "graph";
  return `graphwidget-${stem}.${ext}`;
}
