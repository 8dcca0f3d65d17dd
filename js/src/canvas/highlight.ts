/**
 * What is marked on a pane's drawing, kept per graph node so it survives relayouts: the selection, search matches
 * (and the current one), the diff status, the advisor's findings, and what the pointer hovers. Each layout gets a
 * fresh Paint (paintFor); the marks are mapped onto its drawn items.
 */
import type { GraphModel } from "../model/graph";
import type { FindingMarks } from "../model/findings";
import type { ViewGraph } from "../model/view";
import { itemStatus } from "./marks";
import { KIND_BACKWARD, KIND_CUSTOM, KIND_GROUP, KIND_LEAF, edgeBoxes, type Paint } from "./render";

/** The drawing state of a freshly laid-out view: nothing coloured, marked or hovered yet. */
export function paintFor(view: ViewGraph, model: GraphModel): Paint {
  const n = view.items.length;
  return {
    view, edgeBox: edgeBoxes(view), t: new Float64Array(n), hot: new Uint8Array(n),
    kind: Uint8Array.from(view.items, (it) => (it.cluster ? KIND_GROUP : kindCode(model.nodes[it.node].kind))),
    selected: -1, hoverItem: -1, hoverEdge: -1, matches: null, currentMatch: -1, status: null, statusCount: null,
    sub: view.items.map((it) => it.ds), ftitle: view.frames.map((f) => `▾ ${f.title}`), ft: new Float64Array(view.frames.length),
    hoverFrame: -1, fitted: new Map(),
  };
}

function kindCode(kind: string): number {
  return kind === "leaf" ? KIND_LEAF : kind === "custom" ? KIND_CUSTOM : KIND_BACKWARD;
}

export class Highlights {
  /** the selected node index, or -1 */
  selectedNode = -1;
  /** the advisor's findings on this pane's nodes (badges), or null */
  findings: FindingMarks | null = null;
  private matches: Uint8Array | null = null;
  private currentMatchNode = -1;
  /** per node: diff status code (diff/model.ts), or null outside a diff */
  private nodeStatus: Uint8Array | null = null;

  constructor(private model: GraphModel, private paint: () => Paint | null, private redraw: () => void) {}

  /** Maps the node marks onto a new paint's drawn items. */
  applyTo(p: Paint): void {
    this.applyStatus(p);
    this.applyMarks(p);
  }

  setSelected(node: number): void {
    this.selectedNode = node;
    this.applyMarks(this.paint());
    this.redraw();
  }

  setSearch(mask: Uint8Array | null, current: number): void {
    this.matches = mask;
    this.currentMatchNode = current;
    this.applyMarks(this.paint());
    this.redraw();
  }

  /** Diff status per node (changed, added, removed are marked; groups holding them too); null clears. Returns the
   * paint it was applied to (its minimap specks change), or null before the first layout. */
  setStatus(codes: Uint8Array | null): Paint | null {
    this.nodeStatus = codes;
    const p = this.paint();
    if (!p) return null;
    this.applyStatus(p);
    this.redraw();
    return p;
  }

  /** The advisor's findings to badge on this pane's nodes and groups (null: none). */
  setFindings(marks: FindingMarks | null): void {
    this.findings = marks;
    this.redraw();
  }

  setHover(i: number, e: number): void {
    const p = this.paint();
    if (!p || (p.hoverItem === i && p.hoverEdge === e)) return;
    p.hoverItem = i;
    p.hoverEdge = e;
    this.redraw();
  }

  setHoverFrame(f: number): void {
    const p = this.paint();
    if (!p || p.hoverFrame === f) return;
    p.hoverFrame = f;
    this.redraw();
  }

  private applyStatus(p: Paint): void {
    const s = this.nodeStatus ? itemStatus(p.view, this.nodeStatus) : null;
    p.status = s ? s.status : null;
    p.statusCount = s ? s.count : null;
  }

  private applyMarks(p: Paint | null): void {
    if (!p) return;
    const rep = p.view.rep;
    p.selected = this.selectedNode >= 0 ? rep[this.selectedNode] : -1;
    p.currentMatch = this.currentMatchNode >= 0 ? rep[this.currentMatchNode] : -1;
    if (this.matches) {
      const m = new Uint8Array(p.view.items.length);
      for (let i = 0; i < this.model.n; i++) if (this.matches[i]) m[rep[i]] = 1;
      p.matches = m;
    } else p.matches = null;
  }
}
