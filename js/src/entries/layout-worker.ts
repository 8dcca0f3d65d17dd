/**
 * Worker entry. Bundled separately by build.mjs into a string, started from a Blob URL (works from file:// and in
 * Jupyter, where a worker script cannot be fetched from the package). Messages: layout/protocol.ts.
 */
import { computeLayout } from "../layout";
import type { LayoutMessage, LayoutResponse } from "../layout/protocol";

const ctx = self as unknown as {
  onmessage: ((ev: MessageEvent<LayoutMessage>) => void) | null;
  postMessage(msg: LayoutResponse, transfer: Transferable[]): void;
};

ctx.onmessage = (ev) => {
  const msg = ev.data;
  if (msg.kind !== "layout") return;
  const { id, input } = msg;
  try {
    const r = computeLayout(input);
    const frames = [r.fx, r.fy, r.fw, r.fh].filter((a): a is Float64Array => !!a).map((a) => a.buffer);
    ctx.postMessage({ kind: "result", id, result: r }, [r.x.buffer, r.y.buffer, r.ptOff.buffer, r.pts.buffer, ...frames]);
  } catch (err) {
    ctx.postMessage({ kind: "error", id, error: String((err as Error)?.stack ?? err) }, []);
  }
};
