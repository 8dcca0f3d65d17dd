/** Side panel with tabs; the App fills each tab's body (the Findings tab: ui/findings.ts). */
import { h } from "./dom";

export type TabName = "inspector" | "top" | "findings" | "changes";

/** The graph view's tabs; the diff view has its own list. */
export const GRAPH_TABS: [TabName, string][] = [["inspector", "Inspector"], ["top", "Top nodes"], ["findings", "Findings"]];

export class SidePanel {
  readonly el: HTMLElement;
  readonly bodies: Partial<Record<TabName, HTMLElement>>;
  private tabs: Partial<Record<TabName, HTMLButtonElement>>;
  current: TabName = "inspector";

  constructor(names: [TabName, string][] = GRAPH_TABS) {
    this.tabs = {};
    this.bodies = {};
    const bar = h("div", { class: "gw-tabs", attrs: { role: "tablist" } });
    const holder = h("div", { class: "gw-tabbodies" });
    for (const [name, label] of names) {
      const b = h("button", { class: "gw-tab", text: label, attrs: { type: "button", role: "tab", "data-tab": name }, on: { click: () => this.show(name) } });
      this.tabs[name] = b;
      bar.appendChild(b);
      const body = h("div", { class: `gw-tabbody gw-tab-${name}`, attrs: { role: "tabpanel" } });
      this.bodies[name] = body;
      holder.appendChild(body);
    }
    this.el = h("aside", { class: "gw-side" }, bar, holder);
    this.show(names[0][0]);
  }

  /** The body of a tab (an element that is not attached anywhere for a tab this panel does not have). */
  body(name: TabName): HTMLElement {
    return this.bodies[name] ?? document.createElement("div");
  }

  /** Changes a tab's label ("Findings (2)"). */
  setLabel(name: TabName, text: string): void {
    const b = this.tabs[name];
    if (b) b.textContent = text;
  }

  show(name: TabName): void {
    if (!this.tabs[name]) return;
    this.current = name;
    for (const k of Object.keys(this.tabs) as TabName[]) {
      this.tabs[k]!.setAttribute("aria-selected", String(k === name));
      this.bodies[k]!.hidden = k !== name;
    }
  }
}
