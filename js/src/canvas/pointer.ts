/**
 * Mouse, wheel and keyboard on a pane's canvas: drag pans, click selects a node or opens a group (a click on an open
 * group's frame title closes it), hover shows the tooltip. Also the pane's zoom buttons.
 *
 * The wheel follows the convention of maps and plotly in a scrolling page (a notebook): it scrolls the page, and
 * zooms only with Ctrl (⌘ on a Mac; a trackpad pinch sends Ctrl too) or once the graph was clicked into; a hint
 * says so when someone tries. Where nothing around the view scrolls (the exported page) it always zooms. Inside a
 * frame (Colab's and VS Code's output frames, a page embedding the export) the page that scrolls is outside it, out
 * of sight: a frame counts as a scrolling host.
 */
import type { GraphPane } from "./pane";
import type { PaneViewport } from "./viewport";
import { hitEdge, hitFrameTitle, hitItem } from "./geometry";
import { tooltipLines } from "./tooltip";

/** Screen position (relative to the canvas) and the world point under it. */
function pointerAt(pane: GraphPane, ev: { clientX: number; clientY: number }): { wx: number; wy: number; sx: number; sy: number } {
  const r = pane.canvas.getBoundingClientRect();
  const sx = ev.clientX - r.left, sy = ev.clientY - r.top;
  const [wx, wy] = pane.camera.toWorld(sx, sy);
  return { wx, wy, sx, sy };
}

/** Hit testing at a world point: the drawn item, open group's frame title or edge there, or -1. */
function itemAt(pane: GraphPane, wx: number, wy: number): number {
  return pane.view ? hitItem(pane.view, pane.camera.s, wx, wy) : -1;
}

function frameTitleAt(pane: GraphPane, wx: number, wy: number): number {
  return pane.view ? hitFrameTitle(pane.view, pane.camera.s, wx, wy) : -1;
}

function edgeAt(pane: GraphPane, wx: number, wy: number): number {
  const p = pane.paintState;
  return p ? hitEdge(p.view, p.edgeBox, pane.camera.s, wx, wy) : -1;
}

export function bindPointer(pane: GraphPane): void {
  const c = pane.canvas;
  const cam = pane.camera;
  let down: { x: number; y: number; tx: number; ty: number } | null = null;
  let moved = false;
  c.addEventListener("pointerdown", (ev) => {
    if (ev.button !== 0) return;
    down = { x: ev.clientX, y: ev.clientY, tx: cam.tx, ty: cam.ty };
    moved = false;
    c.setPointerCapture(ev.pointerId);
  });
  c.addEventListener("pointermove", (ev) => {
    if (down) {
      const dx = ev.clientX - down.x, dy = ev.clientY - down.y;
      if (!moved && Math.hypot(dx, dy) < 4) return;
      moved = true;
      pane.gesture();
      cam.set(cam.s, down.tx + dx, down.ty + dy, "pan");
      hideTooltip(pane);
      return;
    }
    hover(pane, ev);
  });
  c.addEventListener("pointerup", (ev) => {
    const wasDown = down;
    down = null;
    if (!wasDown || moved) return;
    const p = pointerAt(pane, ev);
    const i = itemAt(pane, p.wx, p.wy);
    if (i < 0) {
      const f = frameTitleAt(pane, p.wx, p.wy);
      if (f >= 0) { pane.marks.setHoverFrame(-1); hideTooltip(pane); void pane.collapse(pane.view!.frames[f].cluster); return; }
      void pane.select(-1, { user: true });
      return;
    }
    const it = pane.view!.items[i];
    // the group's box gives way to its frame: what the tooltip described is no longer under the pointer
    if (it.cluster) { pane.marks.setHover(-1, -1); hideTooltip(pane); void pane.expand(it.cluster); }
    else {
      // the Inspector now says what the tooltip said, and the tooltip would cover the neighbours: keep it away
      // until the pointer leaves this item
      quiet.set(pane, i);
      hideTooltip(pane);
      void pane.select(it.node, { user: true });
    }
  });
  c.addEventListener("pointerleave", () => {
    pane.marks.setHover(-1, -1);
    pane.marks.setHoverFrame(-1);
    quiet.delete(pane);
    hideTooltip(pane);
  });
  // clicked into (focused): the wheel zooms without Ctrl until the focus goes elsewhere
  let engaged = false;
  c.addEventListener("focus", () => { engaged = true; });
  c.addEventListener("blur", () => { engaged = false; });
  c.addEventListener("wheel", (ev) => {
    if (!(ev.ctrlKey || ev.metaKey) && !engaged && pageScrolls(pane.el)) {
      // the page scrolls under the pointer: what the tooltip described is no longer there
      pane.marks.setHover(-1, -1);
      hideTooltip(pane);
      showWheelHint(pane);
      return;
    }
    ev.preventDefault();
    const p = pointerAt(pane, ev);
    pane.gesture();
    cam.zoomAt(Math.exp(-ev.deltaY * (ev.deltaMode === 1 ? 0.05 : 0.0015)), p.sx, p.sy);
  }, { passive: false });
  c.addEventListener("dblclick", (ev) => {
    const p = pointerAt(pane, ev);
    if (itemAt(pane, p.wx, p.wy) < 0) pane.viewport.fit();
  });
  c.addEventListener("keydown", (ev) => {
    if (ev.key === "f") pane.viewport.fit();
    else if (ev.key === "+" || ev.key === "=") pane.viewport.zoomBy(1.25);
    else if (ev.key === "-") pane.viewport.zoomBy(0.8);
    else if (ev.key === "Escape") void pane.select(-1, { user: true });
    else return;
    ev.preventDefault();
  });
}

/** Per pane: the item a click just selected, whose tooltip stays hidden while the pointer is still on it. */
const quiet = new WeakMap<GraphPane, number>();

function hover(pane: GraphPane, ev: PointerEvent): void {
  const p = pointerAt(pane, ev);
  const i = itemAt(pane, p.wx, p.wy);
  const f = i < 0 ? frameTitleAt(pane, p.wx, p.wy) : -1;
  const e = i < 0 && f < 0 ? edgeAt(pane, p.wx, p.wy) : -1;
  pane.marks.setHover(i, e);
  pane.marks.setHoverFrame(f);
  if (i >= 0 && quiet.get(pane) === i) {
    hideTooltip(pane);
    pane.canvas.style.cursor = "pointer";
    return;
  }
  quiet.delete(pane);
  const lines = i >= 0 ? tooltipLines.item(pane.model, pane.hier, pane.view!.items[i], pane.colours.values, pane.colours.metric)
    : f >= 0 ? tooltipLines.frame(pane.model, pane.hier, pane.view!.frames[f], pane.colours.values, pane.colours.metric)
    : e >= 0 ? tooltipLines.edge(pane.model, pane.view!.edges[e], pane.view!) : null;
  const extra = i >= 0 ? pane.describe(i) : null;
  if (!lines) { hideTooltip(pane); return; }
  if (extra) lines.splice(1, 0, extra);
  const tip = pane.surface.tooltip;
  tip.replaceChildren(...lines.map((l, k) => {
    const d = document.createElement("div");
    d.textContent = l;
    if (k === 0) d.className = "gw-tooltip-title";
    return d;
  }));
  tip.hidden = false;
  const { width: w, height: h } = pane.surface;
  const left = Math.min(p.sx + 14, w - tip.offsetWidth - 4);
  const top = p.sy + 16 + tip.offsetHeight > h ? p.sy - tip.offsetHeight - 8 : p.sy + 16;
  tip.style.transform = `translate(${Math.max(0, left)}px, ${Math.max(0, top)}px)`;
  pane.canvas.style.cursor = i >= 0 || f >= 0 ? "pointer" : "grab";
}

/**
 * True when something around the view scrolls (a notebook, a long page) or may (the view is inside a frame: the
 * page around the frame is not visible from here): then the wheel belongs to it.
 */
export function pageScrolls(el: Element): boolean {
  if (inFrame()) return true;
  let e: Element | null = el.parentElement ?? hostOf(el);
  while (e) {
    if (e.scrollHeight > e.clientHeight + 1) {
      const oy = getComputedStyle(e).overflowY;
      if (oy === "auto" || oy === "scroll" || oy === "overlay") return true;
    }
    e = e.parentElement ?? hostOf(e);
  }
  const se = document.scrollingElement;
  return !!se && se.scrollHeight > se.clientHeight + 1 && getComputedStyle(document.body).overflowY !== "hidden";
}

/** Whether this page is shown inside another one (an iframe). Reading window.top is allowed across origins. */
export function inFrame(): boolean {
  try {
    return window.self !== window.top;
  } catch {
    return true;
  }
}

/** The element a shadow root hangs from (marimo renders widgets in shadow roots), or null. */
function hostOf(e: Element): Element | null {
  const r = e.getRootNode();
  return r instanceof ShadowRoot ? r.host : null;
}

const IS_MAC = typeof navigator !== "undefined" && /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);

/** "Ctrl + wheel to zoom" over the graph for a moment, when the wheel scrolled the page instead. */
function showWheelHint(pane: GraphPane): void {
  let hint = pane.el.querySelector<HTMLElement>(".gw-hint");
  if (!hint) {
    hint = document.createElement("div");
    hint.className = "gw-hint";
    hint.setAttribute("role", "status");
    hint.textContent = `${IS_MAC ? "⌘" : "Ctrl"} + wheel to zoom, or click the graph first`;
    pane.el.appendChild(hint);
  }
  hint.hidden = false;
  const h = hint;
  clearTimeout(Number(h.dataset.timer));
  h.dataset.timer = String(window.setTimeout(() => { h.hidden = true; }, 1400));
}

export function hideTooltip(pane: GraphPane): void {
  pane.surface.tooltip.hidden = true;
}

export function zoomControls(viewport: PaneViewport): HTMLElement {
  const box = document.createElement("div");
  box.className = "gw-zoom";
  const mk = (label: string, title: string, fn: () => void) => {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.title = title;
    b.setAttribute("aria-label", title);
    b.addEventListener("click", fn);
    box.appendChild(b);
  };
  mk("+", "Zoom in", () => viewport.zoomBy(1.3));
  mk("−", "Zoom out", () => viewport.zoomBy(1 / 1.3));
  mk("⤢", "Fit the graph (f)", () => viewport.fit());
  return box;
}
