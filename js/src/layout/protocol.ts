/**
 * The messages between the layout client (client.ts, on the page) and the layout worker (entries/layout-worker.ts):
 * one discriminated union, so both sides agree on every shape. Everything in them survives structured cloning
 * (typed arrays, numbers, strings). Besides layouts, the worker unpacks the graph payload before the first layout
 * (model/packed.ts; this layer only carries it, as `unknown`).
 */
import type { LayoutInput, LayoutResult } from "./types";

export type LayoutMessage =
  /** page → worker: lay this out (answered with the same id) */
  | { kind: "layout"; id: number; input: LayoutInput }
  /** worker → page: the layout of request `id` */
  | { kind: "result"; id: number; result: LayoutResult }
  /** worker → page: request `id` threw (the error's stack, or its text) */
  | { kind: "error"; id: number; error: string }
  /** page → worker: unpack this payload (bytes, or `{ base64 }` text) */
  | { kind: "unpack"; id: number; data: unknown }
  /** worker → page: the unpacked payload of request `id` (its arrays' buffers transferred) */
  | { kind: "unpacked"; id: number; value: unknown }
  /** worker → page: the payload of request `id` cannot be shown (the reason, for the page) */
  | { kind: "refused"; id: number; error: string };

export type LayoutRequest = Extract<LayoutMessage, { kind: "layout" | "unpack" }>;
export type LayoutResponse = Exclude<LayoutMessage, LayoutRequest>;
