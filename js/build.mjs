// Builds the two bundles into ../graphwidget/static:
//   widget.js — ESM for anywidget (`export default { render }`)
//   viewer.js — IIFE inlined into exported HTML files
// The layout worker is bundled first into a string and imported as "virtual:layout-worker", so both bundles can
// start it from a Blob URL. CSS is bundled as text and injected at run time (one artifact per entry).
import * as esbuild from "esbuild";
import { mkdirSync, statSync } from "node:fs";

const out = new URL("../graphwidget/static/", import.meta.url).pathname;
mkdirSync(out, { recursive: true });
const common = { bundle: true, minify: true, target: ["es2020", "chrome100", "firefox113", "safari16.4"], legalComments: "none", logLevel: "warning" };

const worker = await esbuild.build({ ...common, entryPoints: ["src/entries/layout-worker.ts"], format: "iife", write: false });
const workerSource = worker.outputFiles[0].text;

const inline = {
  name: "inline",
  setup(build) {
    build.onResolve({ filter: /^virtual:layout-worker$/ }, () => ({ path: "layout-worker", namespace: "inline" }));
    build.onLoad({ filter: /.*/, namespace: "inline" }, () => ({ contents: workerSource, loader: "text" }));
  },
};

await esbuild.build({ ...common, entryPoints: ["src/entries/widget.ts"], format: "esm", outfile: `${out}widget.js`, plugins: [inline], loader: { ".css": "text" } });
await esbuild.build({ ...common, entryPoints: ["src/entries/viewer.ts"], format: "iife", globalName: "graphwidgetViewer", outfile: `${out}viewer.js`, plugins: [inline], loader: { ".css": "text" } });

for (const f of ["widget.js", "viewer.js"]) console.log(`${f}: ${(statSync(out + f).size / 1024).toFixed(1)} KiB`);
