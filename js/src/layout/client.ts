/**
 * Runs layouts off the main thread so the page never freezes. If a worker cannot be created (a strict
 * Content-Security-Policy forbids blob: workers, as some notebook front ends do), it falls back to running the
 * same code on the main thread after a frame, and says so in `mode`.
 */
import workerSource from "virtual:layout-worker";
import { computeLayout } from "./index";
import type { LayoutInput, LayoutResult } from "./types";
import type { LayoutRequest, LayoutResponse } from "./protocol";

type Pending = { resolve: (r: never) => void; reject: (e: Error) => void };

export class LayoutClient {
  mode: "worker" | "main-thread" = "worker";
  private worker: Worker | null = null;
  private url: string | null = null;
  private seq = 0;
  private pending = new Map<number, Pending>();

  constructor() {
    try {
      this.url = URL.createObjectURL(new Blob([workerSource], { type: "text/javascript" }));
      this.worker = new Worker(this.url);
      this.worker.onmessage = (ev: MessageEvent<LayoutResponse>) => {
        const msg = ev.data;
        const p = this.pending.get(msg.id);
        if (!p) return;
        this.pending.delete(msg.id);
        if (msg.kind === "result") p.resolve(msg.result as never);
        else if (msg.kind === "unpacked") p.resolve(msg.value as never);
        else if (msg.kind === "refused") p.reject(new RefusedError(msg.error));
        else p.reject(new Error(`layout failed: ${msg.error}`));
      };
      this.worker.onerror = (ev) => {
        ev.preventDefault();
        this.fallBack();
      };
    } catch {
      this.fallBack();
    }
  }

  layout(input: LayoutInput): Promise<LayoutResult> {
    if (!this.worker) return runHere(input);
    const id = ++this.seq;
    return new Promise<LayoutResult>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // copies, not transfers: the caller keeps its arrays (they are small next to the graph)
      const req: LayoutRequest = { kind: "layout", id, input };
      this.worker!.postMessage(req);
    }).catch((err: Error) => {
      if (this.worker) throw err;
      return runHere(input);
    });
  }

  /**
   * Unpacks a graph payload in the worker (inflating and reading a big graph would otherwise hold the page), or
   * with `here` on this thread when there is no worker. A payload the worker refuses rejects with its reason.
   */
  unpack<T>(data: unknown, here: (data: unknown) => Promise<T>): Promise<T> {
    if (!this.worker) return here(data);
    const id = ++this.seq;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (r: never) => void, reject });
      // a copy: the caller's bytes (a widget model's) stay usable
      const req: LayoutRequest = { kind: "unpack", id, data };
      this.worker!.postMessage(req);
    }).catch((err: Error) => {
      if (err instanceof RefusedError) throw new Error(err.message);
      if (this.worker) throw err;
      return here(data);
    });
  }

  /** Worker refused (CSP) or crashed: retry everything still pending on the main thread. */
  private fallBack(): void {
    this.dispose();
    this.mode = "main-thread";
    for (const [, p] of this.pending) p.reject(new Error("worker unavailable"));
    this.pending.clear();
  }

  dispose(): void {
    this.worker?.terminate();
    this.worker = null;
    if (this.url) URL.revokeObjectURL(this.url);
    this.url = null;
  }
}

/** The worker could read the payload and says why it cannot be shown. */
class RefusedError extends Error {}

function runHere(input: LayoutInput): Promise<LayoutResult> {
  return new Promise((resolve, reject) =>
    setTimeout(() => {
      try { resolve(computeLayout(input)); } catch (e) { reject(e as Error); }
    }, 0),
  );
}
