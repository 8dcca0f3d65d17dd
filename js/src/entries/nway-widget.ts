/**
 * The anywidget binding of the N-way view (the export's NWayApp, js/src/nway/app.ts). Traits: `_nway` (the payload of
 * the "graphwidget-nway" document, the bytes the export inlines), `selected` (the reference's node id or null) and
 * `selected_all` (the node id selected in every pane, null where none), `colour_by`, `height`, `sync` (both ways).
 * A click saves `selected` and `selected_all` with one save_changes. A change of `selected_all` from Python (which
 * `w.selected = n` and `w.select(n, side)` make) selects and centres that node in the first pane it names, and its
 * counterparts in every pane, without writing back.
 */
import { NWayApp } from "../nway/app";
import { bind, saver, startOptions, type WidgetModel } from "./binding";

/** The pane to select in and the node: the first pane with a node in `all` (null: clear every pane). */
export function paneToSelect(all: unknown): [number, number | null] {
  if (!Array.isArray(all)) return [0, null];
  const k = all.findIndex((v) => typeof v === "number");
  return k < 0 ? [0, null] : [k, all[k] as number];
}

export function renderNway({ model, el }: { model: WidgetModel; el: HTMLElement }): () => void {
  const save = saver(model);
  const make = () => new NWayApp(el, {
    ...startOptions(model),
    onSelectAll: (ids, refId, user) => { if (user) save([["selected", refId], ["selected_all", ids]]); },
    onMetric: (m, user) => { if (user) save([["colour_by", m]]); },
    onSync: (on, user) => { if (user) save([["sync", on]]); },
  });
  const apply = async (app: NWayApp) => {
    const all = model.get("selected_all"), now = app.panes.map((_, k) => app.selectedOn(k));
    if (Array.isArray(all) && all.length === now.length && all.every((v, i) => (v ?? null) === now[i])) return;
    const [k, id] = paneToSelect(all);
    await app.selectOn(k, id);
  };
  return bind(model, el, "_nway", make, apply, {
    selected_all: (app) => { if (!app.error && app.panes.length) void apply(app); },
  });
}
