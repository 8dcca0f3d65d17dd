/**
 * Types of the graphwidget JSON schema, version 1 (docs/schema.md).
 * The front end only renders this document; nothing here is computed by JS.
 */

/**
 * Node record keys, in the order the Python side writes them (graphwidget/model/schema.py NODE_KEYS). A Python
 * test (tests/test_house.py) parses this array literal out of this file: keep it one literal of double-quoted strings.
 */
export const NODE_KEYS = ["op", "kind", "outputs", "saved", "attrs", "saved_bytes", "tensor", "source", "code", "module", "out_stride", "out_contiguous", "seq", "fwd_ms", "bwd_ms", "grad_bytes", "lib_source"] as const;

/** Edge record keys besides source and target, in the Python order (graphwidget/model/schema.py EDGE_KEYS). */
export const EDGE_KEYS = ["output", "slot", "shape", "dtype", "also"] as const;

export interface OutputMeta {
  shape: number[] | null;
  dtype: string | null;
  device: string | null;
}

export interface SavedTensor {
  name: string;
  shape: number[] | null;
  stride: number[] | null;
  dtype: string | null;
  device: string | null;
  contiguous: boolean | null;
  memory_format: string | null;
  bytes: number | null;
  storage_bytes: number | null;
  storage: number | null;
  freed: boolean;
  /** saved behind saved-tensor hooks and never unpacked by the capture: its bytes are not held by the graph */
  packed?: "checkpoint" | "hooks" | null;
  /** modified in place after the forward: backward would fail with a version mismatch */
  stale?: boolean | null;
}

export interface LeafTensor {
  shape?: number[] | null;
  stride?: number[] | null;
  dtype?: string | null;
  device?: string | null;
  contiguous?: boolean | null;
  memory_format?: string | null;
  bytes?: number | null;
  requires_grad?: boolean | null;
  name?: string | null;
  /** graph-local storage id (the same numbering as saved tensors): a saved tensor of a parameter shares it */
  storage?: number | null;
}

export interface GraphNode {
  id: number;
  op: string;
  kind: "backward" | "custom" | "leaf" | string;
  outputs: (OutputMeta | null)[] | null;
  saved: SavedTensor[];
  attrs: Record<string, unknown>;
  saved_bytes: number;
  tensor: LeafTensor | null;
  source: string | null;
  code: string | null;
  module: string | null;
  out_stride: (number[] | null)[] | null;
  out_contiguous: (boolean | null)[] | null;
  seq: number | null;
  fwd_ms: number | null;
  bwd_ms: number | null;
  /** bytes of the gradients this node's backward writes (sizes on its incoming edges); null if unknown */
  grad_bytes: number | null;
  /** gw.trace: innermost torch library line (relative to site-packages) for nodes made inside torch.nn, else null */
  lib_source?: string | null;
  /**
   * memory-profiled graphs only (`memory=True`, docs/memory.md): bytes this node holds at the step's memory peak
   * (saved activations it was the first to save, gradients of its outputs); null when the graph has no memory
   * record. An optional key (graphwidget/model/schema.py OPTIONAL_NODE_KEYS), so not in NODE_KEYS.
   */
  peak_bytes?: number | null;
  /** a rank's graph (optional key, docs/nway.md): max - min over the ranks of the node's time; null if unknown */
  rank_spread_ms?: number | null;
}

export interface GraphEdge {
  source: number;
  target: number;
  output: number | null;
  slot: number | null;
  shape: number[] | null;
  dtype: string | null;
  /** more connections between the same pair (`a * a` feeds slots 0 and 1), else null */
  also: EdgeConnection[] | null;
}

/** One more connection between the same two nodes as its edge record. */
export interface EdgeConnection {
  output: number | null;
  slot: number | null;
  shape: number[] | null;
  dtype: string | null;
}

export interface GraphMeta {
  torch: string | null;
  title: string | null;
  roots: number[];
  traced: boolean;
  timed: boolean;
  timing: Record<string, unknown> | null;
}

/** Finding keys in the order the Python side writes them (graphwidget/model/schema.py FINDING_KEYS). */
export const FINDING_KEYS = ["rule", "severity", "nodes", "source", "code", "module", "message", "suggestion", "evidence"] as const;

/**
 * The numbers behind a finding (docs/schema.md "Findings"; rule-specific keys in docs/advisor.md). Every value is
 * plain JSON; the view shows the common ones and lists the rest.
 */
export interface FindingEvidence {
  /** the cause's op */
  op?: string;
  /** size of the tensor at the cause */
  bytes?: number;
  /** gradient bytes the finding's nodes write in backward */
  grad_bytes?: number;
  /** what the rewrite avoids (an estimate) */
  waste_bytes?: number;
  /** gw.profile only: measured backward time of its nodes, and its share of the measured backward */
  bwd_ms?: number;
  share_of_backward?: number;
  /** what findings are ranked by, and of what (backward_ms | grad_bytes | nodes | saved_bytes | op_ms | step_ms) */
  share?: number;
  share_of?: string;
  [key: string]: unknown;
}

/** One finding of the rewrite advisor (computed in Python; the view only shows it). */
export interface Finding {
  /** stable id: repeat-broadcast, materialised-expand, loop-built, index-repeated, dtype-upcast, memory-layout, ... */
  rule: string;
  severity: "warning" | "info";
  /** node ids involved, the cause first */
  nodes: number[];
  /** the user's line that causes it, its text, its nn.Module path */
  source: string | null;
  code: string | null;
  module: string | null;
  message: string;
  /** the rewrite, as code where possible */
  suggestion: string | null;
  evidence: FindingEvidence;
}

export interface GraphDoc {
  format: "graphwidget";
  version: number;
  meta: GraphMeta;
  nodes: GraphNode[];
  edges: GraphEdge[];
  /** the advisor's findings: absent/null when the graph was never advised, [] when nothing was found */
  findings?: Finding[] | null;
}
