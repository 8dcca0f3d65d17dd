/**
 * What the anywidget bindings of the three views share (widget.ts: a graph; diff-widget.ts: a diff; nway-widget.ts:
 * N panes): the document arrives in one Bytes trait and is drawn again when it changes, `colour_by` and `height`
 * follow Python, a view of several panes also follows `sync`, and what a click changes is saved in one
 * save_changes.
 */
import { isMetricName, type MetricName } from "../model/colour";

export interface WidgetModel {
  get(name: string): unknown;
  set(name: string, value: unknown): void;
  save_changes(): void;
  on(event: string, cb: () => void): void;
  off(event: string, cb: () => void): void;
}

/** What a binding drives: the graph view's App, or one of several panes (which also keeps their cameras in step). */
export interface BoundApp {
  error: string | null;
  metric: MetricName;
  load(data: unknown): Promise<void>;
  colourBy(metric: MetricName, user?: boolean): void;
  dispose(): void;
  syncOn?: boolean;
  setSync?(on: boolean, user?: boolean): void;
}

/** The `height` trait as CSS (600 px when unset). */
export const px = (v: unknown): string => `${Number(v) > 0 ? Number(v) : 600}px`;

/** The options every view takes from the traits at start: height, colour metric, sync. */
export function startOptions(model: WidgetModel): { height: string; metric: MetricName | null; sync: boolean } {
  const m = model.get("colour_by");
  return { height: px(model.get("height")), metric: isMetricName(m) ? m : null, sync: model.get("sync") !== false };
}

function same(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => (v ?? null) === (b[i] ?? null));
  return a === b;
}

/** Sets the traits whose value changed (arrays by their items), then saves once if any did. */
export function saver(model: WidgetModel): (pairs: [string, unknown][]) => void {
  return (pairs) => {
    let changed = false;
    for (const [k, v] of pairs) if (!same(model.get(k), v)) { model.set(k, v); changed = true; }
    if (changed) model.save_changes();
  };
}

/**
 * Makes the view with `make` and loads the bytes of trait `data` into it (again, in a new view, when they change),
 * then `loaded(app)` restores what the traits say is selected. `colour_by`, `height` and (for a view with Sync)
 * `sync` follow Python; `on` adds the view's own traits (trait name -> what a change does). Returns the cleanup.
 */
export function bind<A extends BoundApp>(model: WidgetModel, el: HTMLElement, data: string, make: () => A,
  loaded: (app: A) => Promise<void>, on: Record<string, (app: A) => void>): () => void {
  let app!: A;
  const load = () => {
    app?.dispose();
    app = make();
    const mine = app;
    void mine.load(model.get(data)).then(async () => {
      if (mine.error || mine !== app) return; // the error is shown in the view
      await loaded(mine);
    });
  };
  load();
  const handlers: [string, () => void][] = [
    ["change:colour_by", () => {
      const m = model.get("colour_by");
      if (isMetricName(m) && m !== app.metric) app.colourBy(m, false);
    }],
    ["change:height", () => { el.style.height = px(model.get("height")); }],
    [`change:${data}`, load],
    ...Object.entries(on).map(([name, f]): [string, () => void] => [`change:${name}`, () => f(app)]),
  ];
  if (app.setSync) {
    handlers.push(["change:sync", () => { const v = model.get("sync") !== false; if (v !== app.syncOn) app.setSync?.(v, false); }]);
  }
  for (const [e, f] of handlers) model.on(e, f);
  return () => {
    for (const [e, f] of handlers) model.off(e, f);
    app.dispose();
  };
}
