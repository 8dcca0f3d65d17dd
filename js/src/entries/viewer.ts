/**
 * Standalone viewer for export_html: an IIFE inlined in the page. It reads the document from
 * <script type="application/octet-stream" id="gw-graph-data" data-encoding="gzip+base64" data-kind="graph|diff"
 * data-colour="METRIC"> (no data-kind: a graph; data-colour: the metric to open with, Python's default colour)
 * and mounts the same App (or DiffApp) as the widget into #gw-root. Also exposed as
 * `graphwidgetViewer.mount(el, bytes, opts)` and `graphwidgetViewer.mountDiff(el, bytes, opts)` for other pages.
 */
import { App, type AppOptions } from "../ui/app";
import { DiffApp, type DiffAppOptions } from "../diff/app";
import { base64ToBytes } from "../model/decode";
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

function boot(): void {
  const root = document.getElementById("gw-root");
  const data = document.getElementById("gw-graph-data");
  if (!root || !data) return;
  const enc = data.getAttribute("data-encoding") ?? "gzip+base64";
  const text = data.textContent ?? "";
  const bytes = enc.endsWith("base64") ? base64ToBytes(text) : text;
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
