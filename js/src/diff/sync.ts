/**
 * Sync: when the user pans or zooms one pane, the other pans by the same screen distance and zooms by the same
 * factor about the same screen point (Camera.follow). Each side keeps its own offset, so two different layouts
 * stay usable; centring on a selection or fitting moves only that pane.
 */
import type { CameraChange } from "../canvas/camera";
import type { GraphPane } from "../canvas/pane";

/** Links the cameras while `on()` is true; returns a function that unlinks them. */
export function linkCameras(panes: GraphPane[], on: () => boolean): () => void {
  const listeners = panes.map((p, k) => {
    const f = (ch: CameraChange) => {
      if (!on() || (ch.reason !== "pan" && ch.reason !== "zoom")) return;
      panes.forEach((q, j) => { if (j !== k && q.view) { q.gesture(); q.camera.follow(ch); } });
    };
    p.camera.on("change", f);
    return f;
  });
  return () => panes.forEach((p, k) => p.camera.off("change", listeners[k]));
}
