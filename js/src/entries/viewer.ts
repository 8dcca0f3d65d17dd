/**
 * Standalone viewer for export_html: an IIFE inlined in the page. It reads the document from
 * <script type="application/octet-stream" id="gw-graph-data" data-encoding="gzip+base64" data-kind="graph|diff"
 * data-colour="METRIC"> (no data-kind: a graph; data-colour: the metric to open with, Python's default colour)
 * and mounts the same App (or DiffApp) as the widget into #gw-root. Also exposed as
 * `graphwidgetViewer.mount(el, bytes, opts)` and `graphwidgetViewer.mountDiff(el, bytes, opts)` for other pages.
 * An N-way page (<script id="gw-nway-data" data-kind="nway">, views/nway_view.py) mounts the N-way view into
 * #gw-nway-root instead (`graphwidgetViewer.mountNway`).
 */
import { App, type AppOptions } from "../ui/app";
import { DiffApp, type DiffAppOptions } from "../diff/app";
import { NWayApp, type NWayAppOptions } from "../nway/app";
import { isMetricName } from "../model/colour";

export function mount(el: HTMLElement, data: unknown, opts: AppOptions = {}): App {
  const app = new App(el, opts);
  void app.load(data);
  return app;
}

export function mountDiff(el: HTMLElement, data: unknown, opts: DiffAppOptions = {}): DiffApp {
  const app = new DiffApp(el, opts);
  void app.load(data);
  return app;
}

/** The N-way view: one pane per graph of an N-way document (bytes or a parsed document). */
export function mountNway(el: HTMLElement, data: unknown, opts: NWayAppOptions = {}): NWayApp {
  const app = new NWayApp(el, opts);
  void app.load(data);
  return app;
}

/** The N-way export (views/nway_view.py): <script id="gw-nway-data" data-kind="nway"> mounted into #gw-nway-root. */
function bootNway(): boolean {
  const root = document.getElementById("gw-nway-root");
  const data = document.getElementById("gw-nway-data");
  if (!root || !data) return false;
  const colour = data.getAttribute("data-colour");
  const app = mountNway(root, { base64: data.textContent ?? "" }, { metric: isMetricName(colour) ? colour : null });
  const host = document.getElementById("gw-nway");
  app.ready.then(() => host?.setAttribute("data-gw-state", "ready"), () => host?.setAttribute("data-gw-state", "error"));
  return true;
}

function boot(): void {
  if (bootNway()) return;
  const root = document.getElementById("gw-root");
  const data = document.getElementById("gw-graph-data");
  if (!root || !data) return;
  const enc = data.getAttribute("data-encoding") ?? "gzip+base64";
  const text = data.textContent ?? "";
  // base64 text is decoded where the payload is unpacked: in the layout worker, off this thread
  const bytes = enc.endsWith("base64") ? { base64: text } : text;
  // the colour to open with, as Python chose it; no height option: the page sizes #gw-root
  const colour = data.getAttribute("data-colour");
  const opts = { metric: isMetricName(colour) ? colour : null };
  if (data.getAttribute("data-kind") === "diff") mountDiff(root, bytes, opts);
  else mount(root, bytes, opts);
}

if (typeof document !== "undefined") {
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
  else boot();
}

/** The layout entry point, exposed for benchmarks (tests/bench/bench_viewer.py compares the algorithms). */
export { computeLayout } from "../layout";
