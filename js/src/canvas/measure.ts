/** Box sizes from text widths. Widths are cached per string: op names repeat thousands of times. */
export const FONT_FAMILY = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';
export const LABEL_FONT = `600 12px ${FONT_FAMILY}`;
export const SUB_FONT = `10px ${FONT_FAMILY}`;
/** frame titles (expanded groups), at world scale */
export const TITLE_FONT = `600 11px ${FONT_FAMILY}`;
const PAD = 10;
const MIN_W = 56;
const MAX_W = 240;
/** a group's first line names it and its class ("blocks.0–11 · DecoderBlock ×12"): room for that */
const MAX_GROUP_W = 320;
const GLYPH_W = 18; // room for the expand mark on group boxes

type Ctx = { font: string; measureText(s: string): { width: number } };

export class TextMeasurer {
  private ctx: Ctx;
  private cache = new Map<string, number>();

  constructor() {
    const c = typeof OffscreenCanvas !== "undefined" ? new OffscreenCanvas(1, 1).getContext("2d")
      : typeof document !== "undefined" ? document.createElement("canvas").getContext("2d") : null;
    // no canvas (jsdom-less unit tests): approximate 7 px per character
    this.ctx = (c as Ctx | null) ?? { font: "", measureText: (s: string) => ({ width: s.length * 7 }) };
  }

  width(text: string, font: string): number {
    const key = `${font}\u0000${text}`;
    let w = this.cache.get(key);
    if (w === undefined) {
      this.ctx.font = font;
      w = this.ctx.measureText(text).width;
      if (this.cache.size > 50000) this.cache.clear();
      this.cache.set(key, w);
    }
    return w;
  }

  /** Cuts text with an ellipsis to fit maxWidth (cutText: a trailing count stays). */
  fit(text: string, font: string, maxWidth: number): string {
    return cutText((t) => this.width(t, font), text, maxWidth, false);
  }

  /** Cuts from the left: the end of a module path ("…layers.3.attn") is the part that tells boxes apart. */
  fitLeft(text: string, font: string, maxWidth: number): string {
    if (this.width(text, font) <= maxWidth) return text;
    let lo = 0, hi = text.length;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.width(`…${text.slice(text.length - mid)}`, font) <= maxWidth) lo = mid; else hi = mid - 1;
    }
    return `…${text.slice(text.length - lo)}`;
  }

  box = (label: string, sublabel: string, group: boolean, cutLeft = false): { w: number; h: number; dl: string; ds: string } => {
    const extra = group ? GLYPH_W : 0;
    const max = group ? MAX_GROUP_W : MAX_W;
    const inner = max - 2 * PAD - extra;
    const dl = cutLeft ? this.fitLeft(label, LABEL_FONT, inner) : this.fit(label, LABEL_FONT, inner);
    const ds = this.fit(sublabel, SUB_FONT, inner);
    const tw = Math.max(this.width(dl, LABEL_FONT), ds ? this.width(ds, SUB_FONT) : 0);
    const w = Math.min(max, Math.max(MIN_W, Math.ceil(tw) + 2 * PAD + extra));
    const h = group ? 40 : ds ? 36 : 26;
    return { w, h, dl, ds };
  };
}

/**
 * Cuts text to a width with an ellipsis (binary search on the length), at the end or (`left`) at the start. A label
 * that ends in a count ("h.0–11 · GPT2Block ×12", "Mul ×8") keeps it and loses the middle ("h.0–11 · GPT2B… ×12"):
 * the ×N is what says a box stands for many.
 */
export function cutText(width: (t: string) => number, text: string, maxWidth: number, left: boolean): string {
  if (width(text) <= maxWidth) return text;
  const m = left ? null : / ×\d+$/.exec(text);
  const tail = m && width(`…${m[0]}`) <= maxWidth ? m[0] : "";
  const head = tail ? text.slice(0, text.length - tail.length) : text;
  const piece = (k: number) => (left ? `…${head.slice(head.length - k)}` : `${head.slice(0, k)}…${tail}`);
  let lo = 0, hi = head.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (width(piece(mid)) <= maxWidth) lo = mid; else hi = mid - 1;
  }
  return piece(lo);
}
