/**
 * The anywidget binding of the diff view. Traits: `_diff` (the diff document's payload: model/decode.ts), `selected_a` and
 * `selected_b` (node ids or null, both ways), `colour_by`, `height`, `sync` (both ways).
 * A click sets both selections (the clicked node and its counterpart, or null) with one save_changes. Setting
 * `selected_a` / `selected_b` from Python selects and centres that node and its counterpart, without writing back.
 */
import { DiffApp } from "../diff/app";
import { isMetricName } from "../model/colour";
import type { WidgetModel } from "./widget";

export function renderDiff({ model, el }: { model: WidgetModel; el: HTMLElement }): () => void {
  const px = (v: unknown) => `${Number(v) > 0 ? Number(v) : 600}px`;
  let app: DiffApp;
  const save = (pairs: [string, unknown][]) => {
    let changed = false;
    for (const [k, v] of pairs) if (model.get(k) !== v) { model.set(k, v); changed = true; }
    if (changed) model.save_changes();
  };
  const make = () => new DiffApp(el, {
    height: px(model.get("height")),
    metric: isMetricName(model.get("colour_by")) ? (model.get("colour_by") as never) : null,
    sync: model.get("sync") !== false,
    onSelectPair: (a, b, user) => { if (user) save([["selected_a", a], ["selected_b", b]]); },
    onMetric: (m, user) => { if (user) save([["colour_by", m]]); },
    onSync: (on, user) => { if (user) save([["sync", on]]); },
  });
  const load = () => {
    app?.dispose();
    app = make();
    const mine = app;
    void mine.load(model.get("_diff")).then(async () => {
      if (mine.error || mine !== app) return; // the error is shown in the view
      const a = model.get("selected_a"), b = model.get("selected_b");
      if (typeof a === "number") await mine.selectOn(0, a);
      else if (typeof b === "number") await mine.selectOn(1, b);
    });
  };
  load();
  const onSel = (side: 0 | 1) => () => {
    const v = model.get(side === 0 ? "selected_a" : "selected_b");
    if (typeof v === "number") { if (app.selectedOn(side) !== v) void app.selectOn(side, v); }
    else if (v === null && app.selectedOn(side) !== null) void app.selectOn(side, null);
  };
  const onA = onSel(0), onB = onSel(1);
  const onColour = () => {
    const m = model.get("colour_by");
    if (isMetricName(m) && m !== app.metric) app.colourBy(m, false);
  };
  const onHeight = () => { el.style.height = px(model.get("height")); };
  const onSync = () => { const on = model.get("sync") !== false; if (on !== app.syncOn) app.setSync(on, false); };
  const handlers: [string, () => void][] = [["change:selected_a", onA], ["change:selected_b", onB], ["change:colour_by", onColour],
    ["change:height", onHeight], ["change:sync", onSync], ["change:_diff", load]];
  for (const [e, f] of handlers) model.on(e, f);
  return () => {
    for (const [e, f] of handlers) model.off(e, f);
    app.dispose();
  };
}
