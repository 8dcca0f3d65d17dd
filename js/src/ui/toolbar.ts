/** The toolbar: title, search box and counter, colour menu, group buttons, Fit, picture buttons (SVG, PNG), Panel
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
      h("span", { class: "gw-savebtns" },
        h("button", { text: "SVG", title: "Save the view as an SVG picture: what is on screen, with labels, badges and the legend",
          attrs: { type: "button", "data-action": "save-svg" }, on: { click: () => act.save("svg") } }),
        h("button", { text: "PNG", title: "Save the view as a PNG picture (twice the screen's size in pixels)",
          attrs: { type: "button", "data-action": "save-png" }, on: { click: () => act.save("png") } })),
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
