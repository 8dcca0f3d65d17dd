/**
 * Worker entry. Bundled separately by build.mjs into a string, started from a Blob URL (works from file:// and in
 * Jupyter, where a worker script cannot be fetched from the package).
 */
import { computeLayout } from "../layout";
import type { LayoutInput, LayoutResult } from "../layout/types";

interface Req { id: number; input: LayoutInput; }

const ctx = self as unknown as {
  onmessage: ((ev: MessageEvent<Req>) => void) | null;
  postMessage(msg: unknown, transfer: Transferable[]): void;
};

ctx.onmessage = (ev) => {
  const { id, input } = ev.data;
  try {
    const r: LayoutResult = computeLayout(input);
    const frames = [r.fx, r.fy, r.fw, r.fh].filter((a): a is Float64Array => !!a).map((a) => a.buffer);
    ctx.postMessage({ id, result: r }, [r.x.buffer, r.y.buffer, r.ptOff.buffer, r.pts.buffer, ...frames]);
  } catch (err) {
    ctx.postMessage({ id, error: String((err as Error)?.stack ?? err) }, []);
  }
};
