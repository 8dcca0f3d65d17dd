/**
 * Canvas colours for light and dark pages. The node fills (the colour scale) are the same on both; what sits on the
 * background (edges, rings, edge labels) changes. The theme follows the background the view actually has (a dark
 * Jupyter theme, or `prefers-color-scheme: dark` outside Jupyter).
 */

export interface Theme {
  dark: boolean;
  bg: string; edge: string; edgeHi: string;
  /** label text on a node's (light) fill, and its muted variant */
  text: string; textMuted: string;
  /** text drawn on the background (the ×N edge counts) */
  bgText: string;
  stroke: string; select: string; match: string; hot: string; group: string; groupShadow: string;
  /** diff status: changed, added, removed (outline, stripe and badge) */
  changed: string; added: string; removed: string;
}

export const LIGHT: Theme = {
  dark: false,
  bg: "#fbfbfc", edge: "#9aa3af", edgeHi: "#2563eb", text: "#1f2328", textMuted: "#57606a", bgText: "#57606a",
  stroke: "#6b7280", select: "#2563eb", match: "#d946ef", hot: "#7f1d1d", group: "#374151", groupShadow: "#d1d5db",
  changed: "#d97706", added: "#16a34a", removed: "#dc2626",
};

export const DARK: Theme = {
  dark: true,
  bg: "#16181d", edge: "#6e7681", edgeHi: "#60a5fa", text: "#1f2328", textMuted: "#57606a", bgText: "#9da7b3",
  stroke: "#8b949e", select: "#60a5fa", match: "#e879f9", hot: "#ff7b72", group: "#c9d1d9", groupShadow: "#4b5563",
  changed: "#f59e0b", added: "#22c55e", removed: "#f43f5e",
};

/** Relative luminance (0..1) of a CSS rgb()/rgba() colour, or null if transparent or unparsable. */
export function luminance(css: string): number | null {
  const m = /rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)(?:\s*[,/]\s*([\d.]+%?))?\s*\)/.exec(css);
  if (!m) return null;
  if (m[4] !== undefined && parseFloat(m[4]) === 0) return null;
  const lin = (c: number) => { const v = c / 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * lin(+m[1]) + 0.7152 * lin(+m[2]) + 0.0722 * lin(+m[3]);
}

/** DARK when the first opaque background at or above `el` is dark, else LIGHT. */
export function pickTheme(el: Element): Theme {
  for (let e: Element | null = el; e; e = e.parentElement) {
    const l = luminance(getComputedStyle(e).backgroundColor);
    if (l !== null) return l < 0.2 ? DARK : LIGHT;
  }
  return LIGHT;
}
