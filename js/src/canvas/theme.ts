/**
 * Canvas colours for light and dark pages. The node fills (the colour scale) are the same on both; what sits on the
 * background (edges, rings, edge labels, frames) changes. The theme follows the host: the canvas takes the
 * background and text colours the stylesheet gives the pane (JupyterLab's --jp-layout-color0 and
 * --jp-ui-font-color1 in JupyterLab, VS Code's and others' through the same variables, `prefers-color-scheme`
 * elsewhere), and light or dark accents by the luminance of that background.
 */

export interface Theme {
  dark: boolean;
  bg: string; edge: string; edgeHi: string;
  /** label text on a node's (light) fill, and its muted variant */
  text: string; textMuted: string;
  /** text drawn on the background (the ×N edge counts) */
  bgText: string;
  stroke: string; select: string; match: string; hot: string; group: string; groupShadow: string;
  /** diff status: changed, added, removed (outline and badge): hues the colour scale never uses */
  changed: string; added: string; removed: string;
  /** frames (expanded groups): body tint (adds up with nesting), title bar, border, title text, zoomed-out title tab */
  frameFill: string; frameTitle: string; frameStroke: string; frameText: string; frameTab: string;
  /** minimap: low values and missing data (pale specks would vanish), its viewport rectangle */
  speck: string; viewport: string;
}

export const LIGHT: Theme = {
  dark: false,
  bg: "#fbfbfc", edge: "#9aa3af", edgeHi: "#2563eb", text: "#1f2328", textMuted: "#57606a", bgText: "#57606a",
  stroke: "#6b7280", select: "#2563eb", match: "#d946ef", hot: "#7f1d1d", group: "#374151", groupShadow: "#d1d5db",
  changed: "#7c3aed", added: "#0d9488", removed: "#64748b",
  frameFill: "rgba(99,110,125,0.055)", frameTitle: "rgba(99,110,125,0.13)", frameStroke: "rgba(75,85,99,0.55)",
  frameText: "#374151", frameTab: "rgba(229,231,235,0.92)", speck: "#c3c8d0", viewport: "#2563eb",
};

export const DARK: Theme = {
  dark: true,
  bg: "#16181d", edge: "#6e7681", edgeHi: "#60a5fa", text: "#1f2328", textMuted: "#57606a", bgText: "#9da7b3",
  stroke: "#8b949e", select: "#60a5fa", match: "#e879f9", hot: "#ffffff", group: "#c9d1d9", groupShadow: "#4b5563",
  changed: "#a78bfa", added: "#2dd4bf", removed: "#94a3b8",
  frameFill: "rgba(160,170,185,0.06)", frameTitle: "rgba(160,170,185,0.14)", frameStroke: "rgba(160,170,185,0.45)",
  frameText: "#d1d7e0", frameTab: "rgba(40,44,52,0.92)", speck: "#59616d", viewport: "#60a5fa",
};

/** Relative luminance (0..1) of a CSS rgb()/rgba() colour, or null if transparent or unparsable. */
export function luminance(css: string): number | null {
  const m = /rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)(?:\s*[,/]\s*([\d.]+%?))?\s*\)/.exec(css);
  if (!m) return null;
  if (m[4] !== undefined && parseFloat(m[4]) === 0) return null;
  const lin = (c: number) => { const v = c / 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * lin(+m[1]) + 0.7152 * lin(+m[2]) + 0.0722 * lin(+m[3]);
}

/**
 * The theme for a pane: DARK or LIGHT by the luminance of the first opaque background at or above `el`, with the
 * canvas background and the text drawn on it taken from the page (so the canvas is the host's own colour).
 */
export function pickTheme(el: Element): Theme {
  for (let e: Element | null = el; e; e = e.parentElement) {
    const cs = getComputedStyle(e);
    const l = luminance(cs.backgroundColor);
    if (l === null) continue;
    const base = l < 0.2 ? DARK : LIGHT;
    const fg = getComputedStyle(el).color;
    const fgL = luminance(fg);
    // the host's text colour for what sits on the background, if it contrasts with it
    const onBg = fgL !== null && Math.abs(fgL - l) > 0.3 ? fg : null;
    return { ...base, bg: cs.backgroundColor, frameText: onBg ?? base.frameText };
  }
  return LIGHT;
}

/**
 * Calls `changed` when the page's theme may have changed: the OS colour scheme, JupyterLab's theme switch (it sets
 * data-jp-theme-* on <body> and swaps stylesheets, so the check runs again a moment later), VS Code's body class.
 * Returns the function that stops watching.
 */
export function watchTheme(_el: Element, changed: () => void): () => void {
  const timers: number[] = [];
  const soon = () => { for (const ms of [30, 400]) timers.push(window.setTimeout(changed, ms)); };
  const mq = typeof window.matchMedia === "function" ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  mq?.addEventListener?.("change", soon);
  const mo = typeof MutationObserver !== "undefined" && document.body ? new MutationObserver(soon) : null;
  mo?.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-light", "data-jp-theme-name", "class", "data-vscode-theme-kind", "data-theme"] });
  return () => {
    mq?.removeEventListener?.("change", soon);
    mo?.disconnect();
    timers.forEach((t) => clearTimeout(t));
  };
}
