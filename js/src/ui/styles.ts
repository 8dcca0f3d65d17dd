/**
 * The stylesheet is bundled as text and applied once per document (or shadow root) the view lives in.
 *
 * As a constructed stylesheet where the browser has them (`adoptedStyleSheets`): a strict Content-Security-Policy
 * without `style-src 'unsafe-inline'` (VS Code's webviews, hardened pages) blocks an injected <style> element but
 * not a stylesheet built through the CSSOM. Elsewhere, a <style> element.
 */
import css from "./style.css";

const STYLE_ID = "graphwidget-style";
const adopted = new Map<string, WeakSet<Document | ShadowRoot>>();

export function injectStyles(el: HTMLElement): void {
  injectCss(el, STYLE_ID, css);
}

/** Applies `text` once per document or shadow root holding `el` (`id` names it), CSP-proof where possible. */
export function injectCss(el: HTMLElement, id: string, text: string): void {
  const root = el.getRootNode();
  const target: Document | ShadowRoot = root instanceof ShadowRoot ? root : document;
  const done = adopted.get(id) ?? new WeakSet<Document | ShadowRoot>();
  adopted.set(id, done);
  if (done.has(target)) return;
  const host: ParentNode & Node = root instanceof ShadowRoot ? root : document.head ?? document.documentElement;
  if ((host as ParentNode).querySelector?.(`#${id}`)) return;
  if ("adoptedStyleSheets" in target && typeof CSSStyleSheet === "function" && "replaceSync" in CSSStyleSheet.prototype) {
    try {
      const sheet = new CSSStyleSheet();
      sheet.replaceSync(text);
      target.adoptedStyleSheets = [...target.adoptedStyleSheets, sheet];
      done.add(target);
      return;
    } catch {
      // an old engine: fall through to the <style> element
    }
  }
  const style = document.createElement("style");
  style.id = id;
  style.textContent = text;
  host.appendChild(style);
}
