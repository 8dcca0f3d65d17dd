/**
 * The only way this package builds DOM: strings always become text nodes / textContent, never markup, so an op
 * called `<img src=x onerror=alert(1)>` is shown as those characters.
 */
type Child = Node | string | number | null | undefined | false;

export interface Props {
  class?: string;
  title?: string;
  text?: string;
  attrs?: Record<string, string>;
  on?: Partial<Record<keyof HTMLElementEventMap, (ev: Event) => void>>;
}

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (props.class) el.className = props.class;
  if (props.title) el.title = props.title;
  if (props.text !== undefined) el.textContent = props.text;
  if (props.attrs) for (const [k, v] of Object.entries(props.attrs)) el.setAttribute(k, v);
  if (props.on) for (const [k, fn] of Object.entries(props.on)) if (fn) el.addEventListener(k, fn);
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** A two-column key/value table; rows with a null value are skipped. */
export function kvTable(rows: [string, Child][]): HTMLTableElement {
  const t = h("table", { class: "gw-kv" });
  for (const [k, v] of rows) {
    if (v === null || v === undefined || v === "") continue;
    t.appendChild(h("tr", {}, h("th", { text: k }), h("td", {}, v)));
  }
  return t;
}

/** A table with a header row. */
export function gridTable(headers: string[], rows: Child[][], cls = "gw-grid"): HTMLTableElement {
  return h("table", { class: cls },
    h("thead", {}, h("tr", {}, ...headers.map((x) => h("th", { text: x })))),
    h("tbody", {}, ...rows.map((r) => h("tr", {}, ...r.map((c) => h("td", {}, c))))),
  );
}
