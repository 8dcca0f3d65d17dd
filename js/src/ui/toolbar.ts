/** The toolbar: title, search box and counter, colour menu, group buttons, Fit, the picture menu (SVG, PNG), Panel
 * toggle, status text. */
import { h } from "./dom";
import { METRIC_ORDER, METRICS, isMetricName, type MetricName } from "../model/colour";

export interface ToolbarActions {
  search(query: string): void;
  searchStep(dir: 1 | -1): void;
  colourBy(metric: MetricName): void;
  expandAll(): void;
  collapseAll(): void;
  fit(): void;
  togglePanel(): boolean;
  /** saves a picture of the view (what is on screen, with the legend) */
  save(kind: "svg" | "png"): void;
}

export class Toolbar {
  readonly el: HTMLElement;
  readonly title: HTMLElement;
  readonly searchInput: HTMLInputElement;
  readonly searchCount: HTMLElement;
  readonly colourSelect: HTMLSelectElement;
  readonly groupButtons: HTMLElement;
  readonly status: HTMLElement;
  /** where a subclass puts its own controls (the diff view's Sync toggle), before the status text */
  readonly extra: HTMLElement;
  private panelBtn: HTMLButtonElement;

  constructor(act: ToolbarActions) {
    this.title = h("span", { class: "gw-title" });
    this.searchInput = h("input", { class: "gw-search", attrs: { type: "search", placeholder: "Search op, module, source…", "aria-label": "Search nodes", spellcheck: "false" } });
    this.searchCount = h("span", { class: "gw-count", attrs: { "aria-live": "polite" } });
    this.colourSelect = h("select", { class: "gw-colour", attrs: { "aria-label": "Colour nodes by" } });
    this.groupButtons = h("span", { class: "gw-groupbtns" },
      h("button", { title: "Open every group", attrs: { type: "button", "data-action": "expand-all" }, on: { click: () => act.expandAll() } },
        h("span", { class: "gw-long", text: "Expand all" }), h("span", { class: "gw-short", text: "Expand" }), h("span", { class: "gw-icon", text: "⊞" })),
      h("button", { title: "Close every group", attrs: { type: "button", "data-action": "collapse-all" }, on: { click: () => act.collapseAll() } },
        h("span", { class: "gw-long", text: "Collapse all" }), h("span", { class: "gw-short", text: "Collapse" }), h("span", { class: "gw-icon", text: "⊟" })));
    this.status = h("span", { class: "gw-status" });
    this.extra = h("span", { class: "gw-extra-controls" });
    const panelBtn = h("button", { class: "gw-paneltoggle", text: "Panel", attrs: { type: "button", "aria-pressed": "true" } });
    panelBtn.addEventListener("click", () => panelBtn.setAttribute("aria-pressed", String(act.togglePanel())));
    this.panelBtn = panelBtn;
    this.el = h("div", { class: "gw-toolbar" },
      this.title,
      h("span", { class: "gw-searchbox" }, this.searchInput, this.searchCount),
      h("label", { class: "gw-colourbox" }, h("span", { class: "gw-colourlabel", text: "Colour" }), this.colourSelect),
      this.groupButtons,
      h("button", { class: "gw-fitbtn", text: "Fit", title: "Show the whole drawing (also ⤢ beside the graph, the f key, a double-click)",
        attrs: { type: "button", "data-action": "fit" }, on: { click: () => act.fit() } }),
      saveMenu(act),
      panelBtn,
      this.extra,
      this.status);
    this.searchInput.addEventListener("input", () => act.search(this.searchInput.value));
    this.searchInput.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") { ev.preventDefault(); act.searchStep(ev.shiftKey ? -1 : 1); }
      else if (ev.key === "Escape") { this.searchInput.value = ""; act.search(""); }
    });
    this.colourSelect.addEventListener("change", () => {
      if (isMetricName(this.colourSelect.value)) act.colourBy(this.colourSelect.value);
    });
  }

  /** Reflects the side panel's visibility on the Panel button. */
  setPanelShown(shown: boolean): void {
    this.panelBtn.setAttribute("aria-pressed", String(shown));
  }

  /** One option per metric; a metric with no value in any graph shows "(n/a)" and cannot be chosen. */
  fillColours(has: (m: MetricName) => boolean): void {
    this.colourSelect.replaceChildren(...METRIC_ORDER.map((name) => {
      const def = METRICS[name];
      const ok = name === "none" || name === "saved_bytes" || has(name);
      return h("option", { text: ok ? def.label : `${def.label} (n/a)`, attrs: { value: name, ...(ok ? {} : { disabled: "" }) } });
    }));
  }
}

/** One "Save" button (a symbol in a narrow view) and its menu of pictures. The menu is a popover: it opens in the
 * browser's top layer, so the toolbar's one-line clipping never cuts it, and a click elsewhere or Escape closes it.
 * A browser without popovers saves the SVG straight away. */
function saveMenu(act: ToolbarActions): HTMLElement {
  const item = (kind: "svg" | "png", text: string, title: string) => h("button", { text, title,
    attrs: { type: "button", role: "menuitem", "data-action": `save-${kind}` },
    on: { click: () => { hide(); act.save(kind); } } });
  const menu = h("div", { class: "gw-savemenu", attrs: { role: "menu", popover: "auto" } },
    item("svg", "SVG picture", "What is on screen, with labels, badges and the legend, as vector shapes"),
    item("png", "PNG picture", "The same picture in pixels, at twice the screen's resolution"));
  const btn = h("button", { class: "gw-savebtn", title: "Save a picture of the view (SVG or PNG)",
    attrs: { type: "button", "data-action": "save", "aria-haspopup": "menu", "aria-expanded": "false" } },
    h("span", { class: "gw-long", text: "Save…" }),
    h("span", { class: "gw-icon", text: "⤓" }));
  const canPop = typeof (menu as { showPopover?: unknown }).showPopover === "function";
  function hide(): void { if (canPop && menu.matches(":popover-open")) menu.hidePopover(); }
  menu.addEventListener("toggle", (ev) => btn.setAttribute("aria-expanded", String((ev as ToggleEvent).newState === "open")));
  // pointerdown, not click: a click on the button while the menu is open would first light-dismiss it, then open it again
  let wasOpen = false;
  btn.addEventListener("pointerdown", () => { wasOpen = canPop && menu.matches(":popover-open"); });
  btn.addEventListener("click", () => {
    const open = wasOpen || (canPop && menu.matches(":popover-open"));
    wasOpen = false;  // a press that never became a click (dragged off) must not count for the next one
    if (!canPop) { act.save("svg"); return; }
    if (open) { hide(); return; }
    const r = btn.getBoundingClientRect();
    menu.style.top = `${Math.round(r.bottom + 2)}px`;
    menu.style.left = `${Math.round(r.left)}px`;
    menu.showPopover();
    // keep it inside the window when the button sits at the right edge
    const m = menu.getBoundingClientRect();
    const over = m.right - (document.documentElement.clientWidth - 4);
    if (over > 0) menu.style.left = `${Math.max(4, Math.round(r.left - over))}px`;
    (menu.firstElementChild as HTMLElement | null)?.focus();
  });
  return h("span", { class: "gw-savebox" }, btn, menu);
}
