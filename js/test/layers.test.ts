/**
 * The folders of js/src are layers: a module imports from its own folder and from lower layers only, so a lower
 * layer can be read, tested and reused without what sits above it.
 *
 *   schema < layout < model < canvas < picture < ui < diff < nway < entries
 *
 * layout is below model: it lays out typed arrays and knows nothing of graphs (model/view.ts reads its frame
 * padding). diff is above ui: the diff view is the App with a second pane. nway is above diff: the N-way view reuses its marks
 * and camera sync. picture is above canvas: it runs the panes' own drawing code against an SVG context.
 */
import { describe, expect, it } from "vitest";

const LAYERS = ["schema", "layout", "model", "canvas", "picture", "ui", "diff", "nway", "entries"];

declare global {
  interface ImportMeta {
    /** Vite's glob import (vitest runs on Vite); declared here because the project has no Node or Vite types */
    glob<T>(pattern: string, options: { query: string; import: string; eager: true }): Record<string, T>;
  }
}

// Vite reads every source file as text at test time (no Node types in this project, so no node:fs).
const SOURCES = import.meta.glob<string>("../src/**/*.ts", { query: "?raw", import: "default", eager: true });

/** The module specifiers of a file's static imports and re-exports (`import … from "x"`, `export … from "x"`,
 * `import "x"`) and dynamic imports. */
function importsOf(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  const out: string[] = [];
  for (const m of code.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']/gm)) out.push(m[1]);
  for (const m of code.matchAll(/^\s*import\s*["']([^"']+)["']/gm)) out.push(m[1]);
  for (const m of code.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g)) out.push(m[1]);
  return out;
}

/** The folder (layer) a relative specifier of `file` (a path under src/) lands in, or null for a package. */
function layerOf(file: string, spec: string): string | null {
  const parts = target(file, spec);
  if (!parts) return null;
  return parts.length > 1 ? parts[1] : null; // parts[0] is "src"; a file directly in src/ has no layer
}

/** The path parts a relative specifier of `file` points at (without a suffix), or null for a package. */
function target(file: string, spec: string): string[] | null {
  if (!spec.startsWith(".")) return null;
  const parts = file.split("/").slice(0, -1);
  for (const p of spec.split("/")) {
    if (p === "..") parts.pop();
    else if (p !== ".") parts.push(p);
  }
  return parts;
}

const files = Object.entries(SOURCES).map(([path, text]) => ({ file: path.replace(/^\.\.\//, ""), text }));

describe("layers", () => {
  it("reads the sources, each in a known layer", () => {
    expect(files.length).toBeGreaterThan(40);
    for (const { file } of files) {
      const parts = file.split("/");
      if (parts.length > 2) expect(LAYERS, file).toContain(parts[1]);
    }
  });

  it("finds imports the way they are written here", () => {
    expect(importsOf(`import type { A } from "../model/graph";\nimport {\n  b,\n  c,\n} from './x';\nexport { d } from "../layout";\nimport "./side";\n// import { e } from "../ui/app";\n/* import f from "../ui/g"; */\nconst w = () => import("../diff/app");`))
      .toEqual(["../model/graph", "./x", "../layout", "./side", "../diff/app"]);
  });

  it("no module imports from a higher layer", () => {
    const upward: string[] = [];
    for (const { file, text } of files) {
      const own = file.split("/")[1];
      if (!LAYERS.includes(own)) continue;
      for (const spec of importsOf(text)) {
        const to = layerOf(file, spec);
        if (to !== null && LAYERS.indexOf(to) > LAYERS.indexOf(own)) upward.push(`${file} imports ${spec} (${own} < ${to})`);
      }
    }
    expect(upward).toEqual([]);
  });

  it("no module imports itself through others (a cycle); type-only imports are erased and do not count", () => {
    const known = new Set(files.map((f) => f.file));
    const edges = new Map<string, string[]>();
    for (const { file, text } of files) {
      const code = text.replace(TYPE_ONLY, "");
      edges.set(file, importsOf(code).map((spec) => resolve(known, file, spec)).filter((x): x is string => x !== null));
    }
    expect(edges.size).toBe(files.length);
    expect(findCycles(edges)).toEqual([]);
  });

  it("finds a cycle where there is one, and resolves specifiers to files", () => {
    const g = new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a", "d"]], ["d", []]]);
    expect(findCycles(g)).toEqual(["a → b → c → a"]);
    expect(findCycles(new Map([["a", ["b"]], ["b", []]]))).toEqual([]);
    const known = new Set(["src/model/graph.ts", "src/layout/index.ts"]);
    expect(resolve(known, "src/model/view.ts", "./graph")).toBe("src/model/graph.ts");
    expect(resolve(known, "src/model/view.ts", "../layout")).toBe("src/layout/index.ts");
    expect(resolve(known, "src/model/view.ts", "svgcanvas")).toBeNull();
    expect(`import type { A } from "./a";\nexport type { B } from "./b";\nimport { c } from "./c";`.replace(TYPE_ONLY, "").trim())
      .toBe(`import { c } from "./c";`);
  });
});

/** `import type …;` and `export type … from …;` lines: erased by the compiler, they make no runtime import. */
const TYPE_ONLY = /^\s*(?:import|export)\s+type\b[^;]*;/gm;

/** The file under src/ a relative specifier of `file` names (`x.ts` or `x/index.ts`), or null (a package). */
function resolve(known: Set<string>, file: string, spec: string): string | null {
  const parts = target(file, spec);
  if (!parts) return null;
  const base = parts.join("/");
  return [`${base}.ts`, `${base}/index.ts`, base].find((c) => known.has(c)) ?? null;
}

/** Every import cycle a depth-first search meets, as "a → b → a" (a module met again while on the path). */
function findCycles(edges: Map<string, string[]>): string[] {
  const state = new Map<string, number>(); // 1 on the current path, 2 done
  const cycles: string[] = [];
  const path: string[] = [];
  const visit = (f: string): void => {
    state.set(f, 1);
    path.push(f);
    for (const g of edges.get(f) ?? []) {
      if (state.get(g) === 1) cycles.push([...path.slice(path.indexOf(g)), g].join(" → "));
      else if (!state.has(g)) visit(g);
    }
    path.pop();
    state.set(f, 2);
  };
  for (const f of edges.keys()) if (!state.has(f)) visit(f);
  return cycles;
}
