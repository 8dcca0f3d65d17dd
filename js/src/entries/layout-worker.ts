/**
 * Worker entry. Bundled separately by build.mjs into a string, started from a Blob URL (works from file:// and in
 * Jupyter, where a worker script cannot be fetched from the package). Messages: layout/protocol.ts. It lays out, and
 * before the first layout it unpacks the graph payload (model/packed.ts), so the page never inflates or reads a
 * big graph on its own thread.
 */
import { computeLayout } from "../layout";
import { unpackPayload } from "../model/packed";
import type { LayoutMessage, LayoutResponse } from "../layout/protocol";

const ctx = self as unknown as {
  onmessage: ((ev: MessageEvent<LayoutMessage>) => void) | null;
  postMessage(msg: LayoutResponse, transfer: Transferable[]): void;
};

async function unpack(id: number, data: unknown): Promise<void> {
  try {
    const { value, transfer } = await unpackPayload(data);
    if (value.kind === "json") transfer.push(value.bytes.buffer as ArrayBuffer);
    ctx.postMessage({ kind: "unpacked", id, value }, [...new Set(transfer)]);
  } catch (err) {
    ctx.postMessage({ kind: "refused", id, error: (err as Error)?.message ?? String(err) }, []);
  }
}

ctx.onmessage = (ev) => {
  const msg = ev.data;
  if (msg.kind === "unpack") {
    void unpack(msg.id, msg.data);
    return;
  }
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
