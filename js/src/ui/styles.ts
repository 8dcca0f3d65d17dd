/** The stylesheet is bundled as text and injected once per document (or shadow root) the view lives in. */
import css from "./style.css";

const STYLE_ID = "graphwidget-style";

export function injectStyles(el: HTMLElement): void {
  const root = el.getRootNode();
  const host: ParentNode & Node = root instanceof ShadowRoot ? root : document.head ?? document.documentElement;
  if ((host as ParentNode).querySelector?.(`#${STYLE_ID}`)) return;
  const style = document.createElement("style");
  style.id = STYLE_ID;
  style.textContent = css;
  host.appendChild(style);
}
