/**
 * The HTML strips around the panes (the diff's summary, the legend, pane titles) as SVG, the way the browser laid
 * them out: every visible box's background and border, and every text run at its place in its computed font and
 * colour. Text becomes text nodes (never markup), so a graph's strings stay inert in the picture too.
 */
import { SVG_NS } from "./svg-pane";

export interface Origin { left: number; top: number; }

interface Paint { colour: string; opacity: number; }

/** A CSS colour as the browser computes it ("rgb(…)", "rgba(…)") as SVG paint, or null when transparent. */
export function paintOf(css: string): Paint | null {
  const m = /rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)(?:\s*[,/]\s*([\d.]+)(%?))?\s*\)/.exec(css);
  if (!m) return css && css !== "transparent" && css !== "none" ? { colour: css, opacity: 1 } : null;
  const a = m[4] === undefined ? 1 : parseFloat(m[4]) / (m[5] ? 100 : 1);
  if (a <= 0) return null;
  return { colour: `rgb(${Math.round(+m[1])},${Math.round(+m[2])},${Math.round(+m[3])})`, opacity: a };
}

function svgEl<K extends keyof SVGElementTagNameMap>(name: K, attrs: Record<string, string | number>): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, typeof v === "number" ? String(Math.round(v * 100) / 100) : v);
  return el;
}

function setPaint(el: Element, attr: "fill" | "stroke", p: Paint): void {
  el.setAttribute(attr, p.colour);
  if (p.opacity < 1) el.setAttribute(`${attr}-opacity`, String(Math.round(p.opacity * 1000) / 1000));
}

let gradients = 0;

/** Starts a picture: its gradient ids count from 1, so the same view gives the same file. */
export function beginPicture(): void {
  gradients = 0;
}

/** Appends `el` and what it holds, as laid out on screen, to `out` (coordinates relative to `o`). */
export function domToSvg(el: Element, o: Origin, out: SVGElement, defs: SVGDefsElement): void {
  if (!el.getClientRects().length) return; // display: none, or not in the document
  const cs = getComputedStyle(el);
  if (cs.visibility === "hidden" || parseFloat(cs.opacity) === 0) return;
  const r = el.getBoundingClientRect();
  const x = r.left - o.left, y = r.top - o.top;
  boxOf(el, cs, x, y, r.width, r.height, out, defs);
  // an element that clips what overflows it clips its text in the picture too
  let into: SVGElement = out;
  if (cs.overflowX !== "visible" && el.childNodes.length) {
    const clip = svgEl("svg", { x, y, width: r.width, height: r.height, overflow: "hidden" });
    const inner = svgEl("g", { transform: `translate(${-x} ${-y})` });
    clip.appendChild(inner);
    out.appendChild(clip);
    into = inner;
  }
  for (const child of el.childNodes) {
    if (child.nodeType === Node.TEXT_NODE) textOf(child as Text, cs, o, into);
    else if (child.nodeType === Node.ELEMENT_NODE) domToSvg(child as Element, o, into, defs);
  }
}

/** Background (colour or linear gradient, with its corner radius) and borders of one box. */
function boxOf(el: Element, cs: CSSStyleDeclaration, x: number, y: number, w: number, h: number, out: SVGElement, defs: SVGDefsElement): void {
  if (w <= 0 || h <= 0) return;
  const rx = parseFloat(cs.borderTopLeftRadius) || 0;
  const bg = paintOf(cs.backgroundColor);
  const grad = /linear-gradient\(\s*to right\s*,(.*)\)\s*$/.exec(cs.backgroundImage);
  if (grad) {
    const stops = grad[1].match(/rgba?\([^)]*\)|#[0-9a-fA-F]{3,8}/g) ?? [];
    const id = `gw-grad-${++gradients}`;
    const g = svgEl("linearGradient", { id, x1: 0, x2: 1, y1: 0, y2: 0 });
    stops.forEach((c, k) => {
      const stop = svgEl("stop", { offset: stops.length > 1 ? k / (stops.length - 1) : 0 });
      const p = paintOf(c);
      if (p) { stop.setAttribute("stop-color", p.colour); if (p.opacity < 1) stop.setAttribute("stop-opacity", String(p.opacity)); }
      g.appendChild(stop);
    });
    defs.appendChild(g);
    out.appendChild(svgEl("rect", { x, y, width: w, height: h, rx, fill: `url(#${id})` }));
  } else if (bg) {
    const rect = svgEl("rect", { x, y, width: w, height: h, rx });
    setPaint(rect, "fill", bg);
    out.appendChild(rect);
  }
  const sides: [string, number, number, number, number][] = [
    ["Top", x, y, x + w, y], ["Right", x + w, y, x + w, y + h], ["Bottom", x, y + h, x + w, y + h], ["Left", x, y, x, y + h]];
  const widths = sides.map(([s]) => (cs.getPropertyValue(`border-${s.toLowerCase()}-style`) === "none" ? 0 : parseFloat(cs.getPropertyValue(`border-${s.toLowerCase()}-width`)) || 0));
  if (!widths.some((v) => v > 0)) return;
  const colourOf = (s: string) => paintOf(cs.getPropertyValue(`border-${s.toLowerCase()}-color`));
  const dash = (s: string) => (cs.getPropertyValue(`border-${s.toLowerCase()}-style`) === "dashed" ? "4 3" : cs.getPropertyValue(`border-${s.toLowerCase()}-style`) === "dotted" ? "1 2" : "");
  const c0 = colourOf("Top");
  if (widths.every((v) => v === widths[0]) && c0 && sides.every(([s]) => cs.getPropertyValue(`border-${s.toLowerCase()}-color`) === cs.borderTopColor)) {
    const bw = widths[0];
    const rect = svgEl("rect", { x: x + bw / 2, y: y + bw / 2, width: Math.max(0, w - bw), height: Math.max(0, h - bw), rx, fill: "none", "stroke-width": bw });
    setPaint(rect, "stroke", c0);
    if (dash("Top")) rect.setAttribute("stroke-dasharray", dash("Top"));
    out.appendChild(rect);
    return;
  }
  sides.forEach(([s, x0, y0, x1, y1], k) => {
    const c = colourOf(s);
    if (!widths[k] || !c) return;
    const line = svgEl("line", { x1: x0, y1: y0, x2: x1, y2: y1, "stroke-width": widths[k] });
    setPaint(line, "stroke", c);
    if (dash(s)) line.setAttribute("stroke-dasharray", dash(s));
    out.appendChild(line);
  });
}

/** One text node, a <text> per line it was laid out on (split at word boundaries where it wrapped). */
function textOf(node: Text, cs: CSSStyleDeclaration, o: Origin, out: SVGElement): void {
  const s = node.data;
  if (!s.trim()) return;
  const range = document.createRange();
  range.selectNodeContents(node);
  const rects = range.getClientRects();
  if (!rects.length) return;
  const lines: { text: string; left: number; top: number; height: number }[] = [];
  if (rects.length === 1) lines.push({ text: s.trim(), left: rects[0].left + leadingWidth(node, range), top: rects[0].top, height: rects[0].height });
  else {
    // wrapped: the words by the line box they landed in
    const re = /\S+/g;
    let m: RegExpExecArray | null;
    while ((m = re.exec(s))) {
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const q = range.getBoundingClientRect();
      const last = lines[lines.length - 1];
      if (last && Math.abs(last.top - q.top) < q.height / 2) last.text += " " + m[0];
      else lines.push({ text: m[0], left: q.left, top: q.top, height: q.height });
    }
  }
  const fill = paintOf(cs.color);
  for (const line of lines) {
    const t = svgEl("text", { x: line.left - o.left, y: line.top - o.top + line.height / 2, "dominant-baseline": "central",
      "font-size": cs.fontSize, "font-family": cs.fontFamily });
    if (cs.fontWeight !== "400" && cs.fontWeight !== "normal") t.setAttribute("font-weight", cs.fontWeight);
    if (cs.fontStyle !== "normal") t.setAttribute("font-style", cs.fontStyle);
    if (fill) setPaint(t, "fill", fill);
    t.textContent = line.text;
    out.appendChild(t);
  }
}

/** The width of the whitespace a single-line text node starts with (trimmed from the text, kept in its place). */
function leadingWidth(node: Text, range: Range): number {
  const lead = node.data.length - node.data.trimStart().length;
  if (!lead) return 0;
  const r = document.createRange();
  r.setStart(node, 0);
  r.setEnd(node, lead);
  const w = r.getBoundingClientRect().width;
  range.selectNodeContents(node);
  return w;
}
