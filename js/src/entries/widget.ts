/**
 * anywidget entry: `export default { render }` (the form anywidget recommends; a named `render` export makes it log a
 * deprecation notice). A widget with non-empty `_nway` bytes shows the N-way view (nway-widget.ts), one with non-empty
 * `_diff` bytes the diff view (diff-widget.ts); otherwise the
 * graph view: small traits sync both ways (`selected`, `colour_by`, `height`) and the graph itself arrives once as
 * the binary payload (model/decode.ts) in `_graph`.
 */
import { App } from "../ui/app";
import { bind, saver, startOptions, type WidgetModel } from "./binding";
import { renderDiff } from "./diff-widget";
import { renderNway } from "./nway-widget";

export type { WidgetModel } from "./binding";

/** True for bytes with something in them (a DataView in Jupyter; an empty one means "no diff"). */
function hasBytes(v: unknown): boolean {
  if (v instanceof ArrayBuffer) return v.byteLength > 0;
  if (ArrayBuffer.isView(v)) return v.byteLength > 0;
  return typeof v === "string" && v.length > 0;
}

function render({ model, el }: { model: WidgetModel; el: HTMLElement }): () => void {
  if (hasBytes(model.get("_nway"))) return renderNway({ model, el });
  if (hasBytes(model.get("_diff"))) return renderDiff({ model, el });
  return renderGraph({ model, el });
}

function renderGraph({ model, el }: { model: WidgetModel; el: HTMLElement }): () => void {
  const save = saver(model);
  const { height, metric } = startOptions(model);
  const make = () => new App(el, {
    height, metric,
    onSelect: (id, user) => { if (user) save([["selected", id]]); },
    onMetric: (m, user) => { if (user) save([["colour_by", m]]); },
  });
  const loaded = async (app: App) => {
    const sel = model.get("selected");
    if (typeof sel === "number") await app.selectId(sel, true, false);
  };
  return bind(model, el, "_graph", make, loaded, {
    selected: (app) => {
      const v = model.get("selected");
      void app.selectId(typeof v === "number" ? v : null, true, false);
    },
  });
}

export default { render };
