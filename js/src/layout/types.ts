/** Data exchanged between the view and the layout (possibly across a worker boundary: typed arrays only). */

export interface LayoutInput {
  /** node sizes */
  w: Float64Array;
  h: Float64Array;
  /** edges (distinct pairs, no self loops) */
  src: Int32Array;
  dst: Int32Array;
  /** "auto" picks dagre for small graphs and the linear layered layout otherwise */
  algorithm?: "auto" | "dagre" | "layered";
}

export interface LayoutResult {
  /** node centres */
  x: Float64Array;
  y: Float64Array;
  /** edge e's polyline is pts[ptOff[e] .. ptOff[e+1]) as x,y pairs, source end first */
  ptOff: Int32Array;
  pts: Float32Array;
  algorithm: "dagre" | "layered";
  ms: number;
}

export const NODE_SEP = 24;
export const RANK_SEP = 44;

/** dagre is only used where it finishes quickly (see docs/viewer.md for the measurements behind these). */
export const DAGRE_MAX_NODES = 200;
export const DAGRE_MAX_EDGES = 400;

export function chooseAlgorithm(inp: LayoutInput): "dagre" | "layered" {
  if (inp.algorithm === "dagre" || inp.algorithm === "layered") return inp.algorithm;
  return inp.w.length <= DAGRE_MAX_NODES && inp.src.length <= DAGRE_MAX_EDGES ? "dagre" : "layered";
}
