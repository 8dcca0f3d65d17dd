/**
 * The messages between the layout client (client.ts, on the page) and the layout worker (entries/layout-worker.ts):
 * one discriminated union, so both sides agree on every shape. Everything in them survives structured cloning
 * (typed arrays, numbers, strings).
 */
import type { LayoutInput, LayoutResult } from "./types";

export type LayoutMessage =
  /** page → worker: lay this out (answered with the same id) */
  | { kind: "layout"; id: number; input: LayoutInput }
  /** worker → page: the layout of request `id` */
  | { kind: "result"; id: number; result: LayoutResult }
  /** worker → page: request `id` threw (the error's stack, or its text) */
  | { kind: "error"; id: number; error: string };

export type LayoutRequest = Extract<LayoutMessage, { kind: "layout" }>;
export type LayoutResponse = Exclude<LayoutMessage, LayoutRequest>;
