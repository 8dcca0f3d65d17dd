/**
 * anywidget entry: `export default { render }` (the form anywidget recommends; a named `render` export makes it log a
 * deprecation notice). A widget with non-empty `_nway` bytes shows the N-way view (nway-widget.ts), one with non-empty
 * `_diff` bytes the diff view (diff-widget.ts); otherwise the
 * graph view: small traits sync both ways (`selected`, `colour_by`, `height`) and the graph itself arrives once as
 * the binary payload (model/decode.ts) in `_graph`.
 */
import { App } from "../ui/app";
import { isMetricName } from "../model/colour";
import { renderDiff } from "./diff-widget";
import { renderNway } from "./nway-widget";

export interface WidgetModel {
  get(name: string): unknown;
  set(name: string, value: unknown): void;
  save_changes(): void;
  on(event: string, cb: () => void): void;
  off(event: string, cb: () => void): void;
}

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
  const px = (v: unknown) => `${Number(v) > 0 ? Number(v) : 600}px`;
  let app: App;
  const make = () => new App(el, {
    height: px(model.get("height")),
    metric: isMetricName(model.get("colour_by")) ? (model.get("colour_by") as never) : null,
    onSelect: (id, user) => {
      if (!user || model.get("selected") === id) return;
      model.set("selected", id);
      model.save_changes();
    },
    onMetric: (m, user) => {
      if (!user || model.get("colour_by") === m) return;
      model.set("colour_by", m);
      model.save_changes();
    },
  });
  const load = () => {
    app?.dispose();
    app = make();
    const mine = app;
    void mine.load(model.get("_graph")).then(async () => {
      if (mine.error || mine !== app) return; // the error is shown in the view
      const sel = model.get("selected");
      if (typeof sel === "number") await mine.selectId(sel, true, false);
    });
  };
  load();
  const onSelected = () => {
    const v = model.get("selected");
    void app.selectId(typeof v === "number" ? v : null, true, false);
  };
  const onColour = () => {
    const m = model.get("colour_by");
    if (isMetricName(m) && m !== app.metric) app.colourBy(m, false);
  };
  const onHeight = () => { el.style.height = px(model.get("height")); };
  model.on("change:selected", onSelected);
  model.on("change:colour_by", onColour);
  model.on("change:height", onHeight);
  model.on("change:_graph", load);
  return () => {
    model.off("change:selected", onSelected);
    model.off("change:colour_by", onColour);
    model.off("change:height", onHeight);
    model.off("change:_graph", load);
    app.dispose();
  };
}

export default { render };

