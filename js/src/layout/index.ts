/** Picks the layout algorithm for a view; the same function runs in the worker and in the fallback. */
import { dagreLayout } from "./dagre";
import { layeredLayout } from "./layered";
import { compoundLayout } from "./compound";
import { chooseAlgorithm, type LayoutInput, type LayoutResult } from "./types";
import { fitPane } from "./wrap";

export function computeLayout(inp: LayoutInput): LayoutResult {
  if (inp.w.length === 0) {
    return { x: new Float64Array(0), y: new Float64Array(0), ptOff: new Int32Array(inp.src.length + 1), pts: new Float32Array(0), algorithm: "layered", ms: 0 };
  }
  if (inp.fparent && inp.fparent.length) return compoundLayout(inp);
  return fitPane(inp, chooseAlgorithm(inp) === "dagre" ? dagreLayout(inp) : layeredLayout(inp));
}
