/** A graph document's `meta`, checked and with absent optional fields filled (for records and columns alike). */
import type { GraphMeta } from "../schema/types";

import { arr, str } from "./read";

export function normaliseMeta(raw: unknown): GraphMeta {
  const m = (raw && typeof raw === "object" ? raw : {}) as Record<string, unknown>;
  return {
    ...m,
    torch: str(m.torch),
    title: str(m.title),
    roots: arr<number>(m.roots),
    traced: m.traced === true,
    timed: m.timed === true,
    timing: m.timing && typeof m.timing === "object" ? (m.timing as Record<string, unknown>) : null,
    modules: moduleClasses(m.modules),
    modules_inferred: m.modules_inferred === true,
  };
}

/** meta.modules as {path: class name}, string entries only (an older file has none: null). */
function moduleClasses(v: unknown): Record<string, string> | null {
  if (!v || typeof v !== "object" || Array.isArray(v)) return null;
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [k, c] of Object.entries(v as Record<string, unknown>)) if (typeof c === "string" && c) out[k] = c;
  return out;
}
