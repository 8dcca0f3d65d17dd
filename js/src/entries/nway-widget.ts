/**
 * The anywidget binding of the N-way view (the export's NWayApp, js/src/nway/app.ts). Traits: `_nway` (the payload of
 * the "graphwidget-nway" document, the bytes the export inlines), `selected` (the reference's node id or null) and
 * `selected_all` (the node id selected in every pane, null where none), `colour_by`, `height`, `sync` (both ways).
 * A click saves `selected` and `selected_all` with one save_changes. A change of `selected_all` from Python (which
 * `w.selected = n` and `w.select(n, side)` make) selects and centres that node in the first pane it names, and its
 * counterparts in every pane, without writing back.
 */
import { NWayApp } from "../nway/app";
import { isMetricName } from "../model/colour";
import type { WidgetModel } from "./widget";

/** The pane to select in and the node: the first pane with a node in `all` (null: clear every pane). */
export function paneToSelect(all: unknown): [number, number | null] {
  if (!Array.isArray(all)) return [0, null];
  const k = all.findIndex((v) => typeof v === "number");
  return k < 0 ? [0, null] : [k, all[k] as number];
}

function same(a: unknown, b: (number | null)[]): boolean {
  return Array.isArray(a) && a.length === b.length && a.every((v, i) => (v ?? null) === b[i]);
}

export function renderNway({ model, el }: { model: WidgetModel; el: HTMLElement }): () => void {
  const px = (v: unknown) => `${Number(v) > 0 ? Number(v) : 600}px`;
  let app: NWayApp;
  const save = (pairs: [string, unknown][]) => {
    let changed = false;
    for (const [k, v] of pairs) {
      const old = model.get(k);
      if (Array.isArray(v) ? !same(old, v) : old !== v) { model.set(k, v); changed = true; }
    }
    if (changed) model.save_changes();
  };
  const make = () => new NWayApp(el, {
    height: px(model.get("height")),
    metric: isMetricName(model.get("colour_by")) ? (model.get("colour_by") as never) : null,
    sync: model.get("sync") !== false,
    onSelectAll: (ids, refId, user) => { if (user) save([["selected", refId], ["selected_all", ids]]); },
    onMetric: (m, user) => { if (user) save([["colour_by", m]]); },
    onSync: (on, user) => { if (user) save([["sync", on]]); },
  });
  const apply = async (mine: NWayApp) => {
    const all = model.get("selected_all");
    if (same(all, mine.panes.map((_, k) => mine.selectedOn(k)))) return;
    const [k, id] = paneToSelect(all);
    await mine.selectOn(k, id);
  };
  const load = () => {
    app?.dispose();
    app = make();
    const mine = app;
    void mine.load(model.get("_nway")).then(async () => {
      if (mine.error || mine !== app) return; // the error is shown in the view
      await apply(mine);
    });
  };
  load();
  const onSel = () => { if (!app.error && app.panes.length) void apply(app); };
  const onColour = () => {
    const m = model.get("colour_by");
    if (isMetricName(m) && m !== app.metric) app.colourBy(m, false);
  };
  const onHeight = () => { el.style.height = px(model.get("height")); };
  const onSync = () => { const on = model.get("sync") !== false; if (on !== app.syncOn) app.setSync(on, false); };
  const handlers: [string, () => void][] = [["change:selected_all", onSel], ["change:colour_by", onColour],
    ["change:height", onHeight], ["change:sync", onSync], ["change:_nway", load]];
  for (const [e, f] of handlers) model.on(e, f);
  return () => {
    for (const [e, f] of handlers) model.off(e, f);
    app.dispose();
  };
}
