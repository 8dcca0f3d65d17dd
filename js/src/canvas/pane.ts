/**
 * One graph pane. The app holds a row of panes (one for a graph, two side by side for a diff); nothing here is
 * global. The pane coordinates its parts, one concern each:
 *
 * - `surface` (surface.ts): its element, canvas, size, theme and frame scheduling;
 * - `layout` (layouter.ts): the open groups, regrouping and the layout worker;
 * - `viewport` (viewport.ts): the camera, fitting and centring, the minimap, client coordinates;
 * - `marks` (highlight.ts): selection, search matches, diff status, findings, hover;
 * - `colours` (colouring.ts): the colour metric and scale;
 *
 * and draws (render.ts, badges.ts). Pointer handling is in pointer.ts.
 */
import type { GraphModel } from "../model/graph";
import type { Cluster, Hierarchy } from "../model/grouping";
import type { ViewGraph } from "../model/view";
import type { LayoutClient } from "../layout/client";
import { TextMeasurer } from "./measure";
import { draw, type DrawStats, type Paint } from "./render";
import type { Camera } from "./camera";
import { drawFindingBadges, placeFindingBadges, type DrawnBadge } from "./badges";
import { drawStatusBadges, type DrawnStatusBadge } from "./marks";
import { bindPointer, zoomControls } from "./pointer";
import { PaneSurface } from "./surface";
import { PaneViewport, type Anchor } from "./viewport";
import { Layouter, type Timings } from "./layouter";
import { FrameCache } from "./cache";
import { Highlights, paintFor } from "./highlight";
import { Colouring } from "./colouring";

export type { Timings } from "./layouter";

export interface PaneEvents {
  /** node index (or -1); user = clicked in this pane rather than set by code */
  select(node: number, user: boolean): void;
  /** after every relayout */
  changed(): void;
  /** a layout failed; the pane keeps what it showed before */
  error(err: unknown): void;
  /** a relayout started (the drawing is about to change) */
  busy(): void;
  /**
   * The drawn items changed: the owner computes the colour scale (shared by all its panes) and calls
   * colours.applyScale. Without it the pane scales its own values.
   */
  recolour?(): void;
  /** an extra tooltip line for a drawn item (the diff view's status), or null */
  describe?(item: number): string | null;
}

export class GraphPane {
  readonly surface: PaneSurface;
  readonly viewport: PaneViewport;
  readonly layout: Layouter;
  readonly marks: Highlights;
  readonly colours: Colouring;
  /** the last relayout's and the last frame's times */
  readonly timings: Timings = { view: 0, layout: 0, draw: 0, algorithm: "", worker: "" };
  /** the finding badges of the last frame, in canvas CSS pixels */
  badges: DrawnBadge[] = [];
  /** the diff's status badges of the last frame, in canvas CSS pixels */
  statusBadges: DrawnStatusBadge[] = [];
  /** the drawing state of the current view (null before the first layout) */
  private current: Paint | null = null;
  private drawnOnce = false;
  private lastLabels = 0;
  private lastLegible = 0;
  /** the last frame's drawn items on screen and legible labels on them */
  lastItems = { onScreen: 0, labelled: 0 };
  /** group labels the last frame drew beside their box, in canvas CSS pixels */
  lastBeside: [number, number, number, number][] = [];
  /** per node item the last frame labelled: the text it drew (whole, or cut with an ellipsis) */
  lastTexts = new Map<number, string>();
  /** frames drawn from the bitmap of the last full one (cache.ts) and in full, since the pane was made */
  frameCounts = { cached: 0, full: 0 };
  private cache = new FrameCache(() => this.surface.requestDraw());

  /** `layouts`: a layout worker started early (while the data decodes), else the pane starts its own. */
  constructor(host: HTMLElement, readonly model: GraphModel, readonly hier: Hierarchy, private events: PaneEvents,
    title: string | null = null, layouts?: LayoutClient) {
    const measurer = new TextMeasurer();
    const redraw = () => this.surface.requestDraw();
    this.surface = new PaneSurface(title, {
      paint: (ctx, w, h, dpr) => this.paint(ctx, w, h, dpr),
      resized: (oldW, oldH) => {
        if (this.drawnOnce && this.current && (oldW !== this.surface.width || oldH !== this.surface.height)) this.viewport.resized(oldW, oldH);
      },
      themed: (theme) => this.viewport.minimap.setTheme(theme),
      themeChanged: () => this.refreshTheme(),
    });
    this.viewport = new PaneViewport(this.surface, () => this.view, redraw);
    const zoom = zoomControls(this.viewport);
    zoom.appendChild(this.viewport.minimap.button);
    this.surface.el.appendChild(zoom);
    host.appendChild(this.surface.el);
    this.layout = new Layouter(model, hier, measurer, {
      busy: () => events.busy(),
      error: (err) => events.error(err),
      laidOut: (view, anchor) => this.show(view, anchor),
      changed: () => events.changed(),
      size: async () => { await this.surface.sized; return { w: this.surface.width, h: this.surface.height }; },
      currentSize: () => ({ w: this.surface.width, h: this.surface.height }),
    }, this.timings, layouts);
    this.marks = new Highlights(model, () => this.current, redraw);
    this.colours = new Colouring(model, measurer, () => this.current, events.recolour && (() => events.recolour!()), (p) => {
      void this.surface.theme; // the minimap's colours come from the theme
      this.viewport.overview(p);
      redraw();
    });
    bindPointer(this);
  }

  get el(): HTMLDivElement { return this.surface.el; }
  get canvas(): HTMLCanvasElement { return this.surface.canvas; }
  get camera(): Camera { return this.viewport.camera; }
  /** the drawn view (null before the first layout) */
  get view(): ViewGraph | null { return this.current?.view ?? null; }
  /** the drawing state of the current view, for hit testing (null before the first layout) */
  get paintState(): Paint | null { return this.current; }

  // ---- view and layout ----------------------------------------------------------------------------------

  /** Rebuilds the view for the open groups, lays it out in the worker, draws. Anchor keeps a node where it was. */
  relayout(anchor?: Anchor): Promise<void> {
    return this.layout.relayout(anchor);
  }

  /** Resolves when the latest relayout has been drawn. */
  idle(): Promise<void> {
    return this.layout.idle();
  }

  /** A laid-out view: coloured, marked, placed on screen (where the anchor was, or fitted the first time), drawn. */
  private async show(view: ViewGraph, anchor: Anchor | undefined): Promise<void> {
    const p = paintFor(view, this.model);
    this.current = p;
    this.marks.applyTo(p);
    this.colours.recolour();
    await this.surface.sized;
    if (!(anchor && this.viewport.keep(view, anchor)) && !this.drawnOnce) this.viewport.initialView();
    this.viewport.placeOverlays();
    this.surface.drawNow();
    this.drawnOnce = true;
  }

  /**
   * Opens a group: its frame takes the place of its box (the top-left corner stays where it was on screen), and
   * the camera follows to show what it holds.
   */
  async expand(c: Cluster, anchorAtScreen = true): Promise<void> {
    const anchor = anchorAtScreen ? this.viewport.anchorItem(c.id) : undefined;
    if (!this.layout.open(c)) return this.idle();
    await this.layout.relayout(anchor);
    const f = this.view?.frameOfCluster.get(c.id);
    if (f !== undefined) { this.viewport.follow(f); this.viewport.placeOverlays(); }
  }

  /** Closes a group (from its frame's title, the Inspector or the API): its box takes the place of its frame. */
  collapse(c: Cluster): Promise<void> {
    const anchor = this.viewport.anchorFrame(c.id);
    return this.layout.close(c) ? this.layout.relayout(anchor) : this.idle();
  }

  /** Opens exactly these groups, and fits the result. */
  setExpanded(set: Set<Cluster>): Promise<void> {
    this.layout.expanded = set;
    this.drawnOnce = false; // a wholesale change: fit again
    return this.layout.relayout();
  }

  /** Expands every cluster enclosing node i; resolves after the relayout (immediately if nothing changed). */
  reveal(i: number): Promise<void> {
    return this.layout.reveal(i) ? this.layout.relayout() : this.idle();
  }

  // ---- selection, status --------------------------------------------------------------------------------

  /** Selects node `node` (-1: none), opening its groups; `centre` brings it on screen. */
  async select(node: number, opts: { centre?: boolean; user?: boolean } = {}): Promise<void> {
    if (node >= 0) await this.reveal(node);
    this.marks.setSelected(node);
    if (node >= 0 && opts.centre && this.view) this.viewport.centreItem(this.view.rep[node]);
    this.events.select(node, !!opts.user);
  }

  /** Diff status per node (changed, added, removed are marked; groups holding them too); null clears. */
  setStatus(codes: Uint8Array | null): void {
    const p = this.marks.setStatus(codes);
    if (p) this.viewport.overview(p);
  }

  /** The owner's extra tooltip line for a drawn item, or null. */
  describe(item: number): string | null {
    return this.events.describe ? this.events.describe(item) : null;
  }

  // ---- drawing ------------------------------------------------------------------------------------------

  requestDraw(): void {
    this.surface.requestDraw();
  }

  drawNow(): void {
    this.surface.drawNow();
  }

  /** Labels drawn in the last frame (node and group labels, frame titles). */
  get labelCount(): number {
    return this.lastLabels;
  }

  /** Of those, the ones drawn at a legible size on screen. */
  get legibleCount(): number {
    return this.lastLegible;
  }

  /** The user pans or zooms this pane (or a pane synced to it): a big drawing moves as a bitmap until it rests. */
  gesture(): void {
    this.cache.gesture();
  }

  private paint(ctx: CanvasRenderingContext2D, w: number, h: number, dpr: number): void {
    const p = this.current;
    if (p && this.cache.usable(p, ctx.canvas.width, ctx.canvas.height, this.viewport.camera, dpr)) {
      this.cache.drawMoved(ctx, this.viewport.camera, dpr, this.surface.theme.bg);
      this.viewport.minimap.frame(this.viewport.camera, w, h);
      this.frameCounts.cached++;
      return;
    }
    const drawn = this.render(ctx, w, h, dpr);
    if (!drawn) return;
    this.frameCounts.full++;
    this.cache.store(this.canvas, this.viewport.camera, p, drawn.st.nodes + drawn.st.edges);
    const { st, status, badges } = drawn;
    this.lastLabels = st.labels;
    this.lastLegible = st.legible;
    this.lastItems = { onScreen: st.nodes, labelled: st.itemLabels };
    this.lastBeside = st.beside;
    this.lastTexts = st.texts;
    this.statusBadges = status;
    this.badges = badges;
    this.timings.draw = st.ms;
    this.viewport.minimap.frame(this.viewport.camera, w, h);
  }

  /**
   * Draws what the pane shows (graph, labels, badges) into any 2D context: the canvas, or a picture's (ui/picture.ts),
   * which passes `tag` to name each item's shape. Null before the first layout.
   */
  render(ctx: CanvasRenderingContext2D, w: number, h: number, dpr: number, tag?: (item: number) => void):
    { st: DrawStats; status: DrawnStatusBadge[]; badges: DrawnBadge[] } | null {
    const p = this.current;
    if (!p) return null;
    const theme = this.surface.theme;
    const cam = this.viewport.camera;
    const st = draw(ctx, cam, w, h, dpr, p, theme, tag);
    // badges, at a fixed screen size: the diff's status (marks.ts), placed clear of the finding badges, which go on
    // top (badges.ts)
    const findings = this.marks.findings;
    const placed = findings ? placeFindingBadges(cam, w, h, p.view, findings) : [];
    const status = p.status ? drawStatusBadges(ctx, cam, dpr, w, h, p, theme, placed) : [];
    return { st, status, badges: drawFindingBadges(ctx, dpr, placed, theme) };
  }

  /** The page's theme changed (JupyterLab theme switch, OS dark mode): new canvas colours. */
  private refreshTheme(): void {
    this.surface.rereadTheme();
    if (this.current) this.viewport.overview(this.current);
    this.surface.requestDraw();
  }

  dispose(): void {
    this.cache.dispose();
    this.layout.dispose();
    this.surface.dispose();
  }
}
