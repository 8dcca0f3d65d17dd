/**
 * Mouse, wheel and keyboard on a pane's canvas: drag pans, wheel zooms about the pointer, click selects a node or
 * opens a group, hover shows the tooltip. Also the pane's zoom buttons.
 */
import type { GraphPane } from "./pane";
import { tooltipLines } from "../ui/tooltip";

/** Screen position (relative to the canvas) and the world point under it. */
function pointerAt(pane: GraphPane, ev: { clientX: number; clientY: number }): { wx: number; wy: number; sx: number; sy: number } {
  const r = pane.canvas.getBoundingClientRect();
  const sx = ev.clientX - r.left, sy = ev.clientY - r.top;
  const [wx, wy] = pane.camera.toWorld(sx, sy);
  return { wx, wy, sx, sy };
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
    const i = pane.hitItem(p.wx, p.wy);
    if (i < 0) { void pane.select(-1, { user: true }); return; }
    const it = pane.view!.items[i];
    if (it.cluster) void pane.expand(it.cluster);
    else void pane.select(it.node, { user: true });
  });
  c.addEventListener("pointerleave", () => { pane.setHover(-1, -1); hideTooltip(pane); });
  c.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const p = pointerAt(pane, ev);
    cam.zoomAt(Math.exp(-ev.deltaY * (ev.deltaMode === 1 ? 0.05 : 0.0015)), p.sx, p.sy);
  }, { passive: false });
  c.addEventListener("dblclick", (ev) => {
    const p = pointerAt(pane, ev);
    if (pane.hitItem(p.wx, p.wy) < 0) pane.fit();
  });
  c.addEventListener("keydown", (ev) => {
    if (ev.key === "f") pane.fit();
    else if (ev.key === "+" || ev.key === "=") pane.zoomBy(1.25);
    else if (ev.key === "-") pane.zoomBy(0.8);
    else if (ev.key === "Escape") void pane.select(-1, { user: true });
    else return;
    ev.preventDefault();
  });
}

function hover(pane: GraphPane, ev: PointerEvent): void {
  const p = pointerAt(pane, ev);
  const i = pane.hitItem(p.wx, p.wy);
  const e = i < 0 ? pane.hitEdge(p.wx, p.wy) : -1;
  pane.setHover(i, e);
  const lines = i >= 0 ? tooltipLines.item(pane.model, pane.hier, pane.view!.items[i], pane.values, pane.metric)
    : e >= 0 ? tooltipLines.edge(pane.model, pane.view!.edges[e], pane.view!) : null;
  const extra = i >= 0 ? pane.tooltipExtra(i) : null;
  if (!lines) { hideTooltip(pane); return; }
  if (extra) lines.splice(1, 0, extra);
  const tip = pane.tooltip;
  tip.replaceChildren(...lines.map((l, k) => {
    const d = document.createElement("div");
    d.textContent = l;
    if (k === 0) d.className = "gw-tooltip-title";
    return d;
  }));
  tip.hidden = false;
  const { width: w, height: h } = pane.size;
  const left = Math.min(p.sx + 14, w - tip.offsetWidth - 4);
  const top = p.sy + 16 + tip.offsetHeight > h ? p.sy - tip.offsetHeight - 8 : p.sy + 16;
  tip.style.transform = `translate(${Math.max(0, left)}px, ${Math.max(0, top)}px)`;
  pane.canvas.style.cursor = i >= 0 ? "pointer" : "grab";
}

export function hideTooltip(pane: GraphPane): void {
  pane.tooltip.hidden = true;
}

export function zoomControls(pane: GraphPane): HTMLElement {
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
  mk("+", "Zoom in", () => pane.zoomBy(1.3));
  mk("−", "Zoom out", () => pane.zoomBy(1 / 1.3));
  mk("⤢", "Fit the graph (f)", () => pane.fit());
  return box;
}

/** The pane's elements: a focusable canvas, the title bar (when titled) and the (hidden) tooltip. */
export function paneElements(title: string | null): { el: HTMLDivElement; canvas: HTMLCanvasElement; tooltip: HTMLDivElement } {
  const el = document.createElement("div");
  el.className = "gw-pane";
  const canvas = document.createElement("canvas");
  canvas.className = "gw-canvas";
  canvas.tabIndex = 0;
  canvas.setAttribute("aria-label", `${title ? `${title}: ` : ""}autograd graph: drag to pan, wheel to zoom, click a node to inspect it`);
  el.appendChild(canvas);
  if (title !== null) {
    const t = document.createElement("div");
    t.className = "gw-pane-title";
    t.textContent = title;
    t.title = title;
    el.appendChild(t);
  }
  const tooltip = document.createElement("div");
  tooltip.className = "gw-tooltip";
  tooltip.hidden = true;
  el.appendChild(tooltip);
  return { el, canvas, tooltip };
}

/**
 * Calls `resized(width, height)` with the element's CSS size whenever it changes (ignoring collapsed sizes);
 * resolves once it has a size. `observer` receives the ResizeObserver (to disconnect it).
 */
export function watchSize(el: HTMLElement, resized: (w: number, h: number) => void, observer: (ro: ResizeObserver) => void): Promise<void> {
  return new Promise((sized) => {
    const ro = new ResizeObserver(() => {
      const r = el.getBoundingClientRect();
      if (r.width < 2 || r.height < 2) return;
      resized(r.width, r.height);
      sized();
    });
    ro.observe(el);
    observer(ro);
  });
}
