/**
 * The anywidget binding of the diff view. Traits: `_diff` (the diff document's payload: model/decode.ts), `selected_a` and
 * `selected_b` (node ids or null, both ways), `colour_by`, `height`, `sync` (both ways).
 * A click sets both selections (the clicked node and its counterpart, or null) with one save_changes. Setting
 * `selected_a` / `selected_b` from Python selects and centres that node and its counterpart, without writing back.
 */
import { DiffApp } from "../diff/app";
import { bind, saver, startOptions, type WidgetModel } from "./binding";

export function renderDiff({ model, el }: { model: WidgetModel; el: HTMLElement }): () => void {
  const save = saver(model);
  const make = () => new DiffApp(el, {
    ...startOptions(model),
    onSelectPair: (a, b, user) => { if (user) save([["selected_a", a], ["selected_b", b]]); },
    onMetric: (m, user) => { if (user) save([["colour_by", m]]); },
    onSync: (on, user) => { if (user) save([["sync", on]]); },
  });
  const loaded = async (app: DiffApp) => {
    const a = model.get("selected_a"), b = model.get("selected_b");
    if (typeof a === "number") await app.selectOn(0, a);
    else if (typeof b === "number") await app.selectOn(1, b);
  };
  const onSel = (side: 0 | 1) => (app: DiffApp) => {
    const v = model.get(side === 0 ? "selected_a" : "selected_b");
    if (typeof v === "number") { if (app.selectedOn(side) !== v) void app.selectOn(side, v); }
    else if (v === null && app.selectedOn(side) !== null) void app.selectOn(side, null);
  };
  return bind(model, el, "_diff", make, loaded, { selected_a: onSel(0), selected_b: onSel(1) });
}
