/** Data exchanged between the view and the layout (possibly across a worker boundary: typed arrays and numbers). */

export interface LayoutInput {
  /** node sizes */
  w: Float64Array;
  h: Float64Array;
  /** edges (distinct pairs, no self loops) */
  src: Int32Array;
  dst: Int32Array;
  /** "auto" picks dagre for small graphs and the linear layered layout otherwise */
  algorithm?: "auto" | "dagre" | "layered";
  /**
   * Compound graphs (expanded groups drawn as frames around their contents): per node, the frame holding it
   * (-1 = top level); per frame, its enclosing frame (-1 = top level; parents come before their children) and the
   * width its title needs. Each frame's contents are laid out on their own, then the frame is a node of its parent.
   */
  owner?: Int32Array;
  fparent?: Int32Array;
  fminw?: Float64Array;
  /**
   * Layered layout only: nodes pinned to the top row (1) or the bottom row (2), the rest in between. A frame's
   * ports are pinned so: where edges enter it (top) and leave it (bottom).
   */
  pin?: Uint8Array;
  /**
   * The pane's size in CSS pixels: a drawing (or a frame's contents) too tall to fit it legibly is wrapped into
   * columns (wrap.ts). Without it nothing is wrapped.
   */
  pane?: { w: number; h: number };
  /** layered layout only: layers wider than this are folded onto several rows (default MAX_ROW_W) */
  maxRowW?: number;
}

export interface LayoutResult {
  /** node centres */
  x: Float64Array;
  y: Float64Array;
  /** edge e's polyline is pts[ptOff[e] .. ptOff[e+1]) as x,y pairs, source end first */
  ptOff: Int32Array;
  pts: Float32Array;
  /** "dagre+layered": a compound layout that used both (dagre for the small frames while its budget lasted) */
  algorithm: "dagre" | "layered" | "dagre+layered";
  ms: number;
  /** frames (compound input only): centre and size */
  fx?: Float64Array;
  fy?: Float64Array;
  fw?: Float64Array;
  fh?: Float64Array;
  /** set when the drawing was wrapped into columns for the pane (wrap.ts): its bounds, with the margins its edges use */
  wrapped?: { x0: number; y0: number; x1: number; y1: number; columns: number };
}

/** The zoom the first view aims at: 12 px node labels are 9 px on screen, the smallest that reads comfortably. */
export const LEGIBLE_SCALE = 0.75;
/** The border a fitted drawing leaves free on screen (px), on each side. */
export const FIT_PAD = 24;
/** The pane's zoom buttons (style.css .gw-zoom: 8 px in from the top right, 28 px wide, four buttons down to 124 px):
 * the corner, from the right edge and down from the top, that a fitted drawing keeps clear of. */
export const CONTROLS_W = 44;
export const CONTROLS_H = 132;
/** The part of a pane of width `w` and height `h` a fitted drawing fills. */
export function fitRoom(w: number, h: number): { w: number; h: number } {
  return { w: w - 2 * FIT_PAD, h: h - 2 * FIT_PAD };
}

export const NODE_SEP = 24;
export const RANK_SEP = 44;
/** a frame's title bar and the padding around its contents, in world units */
export const FRAME_TITLE_H = 22;
export const FRAME_PAD = 10;
/** a layer wider than this is wrapped onto several rows, so a fan of 200 weights is a block and not a line */
export const MAX_ROW_W = 2400;

/** dagre is only used where it finishes quickly (see docs/viewer.md for the measurements behind these). */
export const DAGRE_MAX_NODES = 200;
export const DAGRE_MAX_EDGES = 400;

export function chooseAlgorithm(inp: LayoutInput): "dagre" | "layered" {
  if (inp.algorithm === "dagre" || inp.algorithm === "layered") return inp.algorithm;
  return inp.w.length <= DAGRE_MAX_NODES && inp.src.length <= DAGRE_MAX_EDGES ? "dagre" : "layered";
}
