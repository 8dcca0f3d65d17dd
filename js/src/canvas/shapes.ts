/** Item kinds as the renderer codes them, and the box path every item is drawn with. */

export const KIND_BACKWARD = 0, KIND_CUSTOM = 1, KIND_LEAF = 2, KIND_GROUP = 3;

/** Adds a (rounded when detailed) rectangle to the current path. */
export function box(ctx: CanvasRenderingContext2D, x: number, y: number, w: number, h: number, r: number, detailed: boolean): void {
  if (detailed && ctx.roundRect) ctx.roundRect(x, y, w, h, r);
  else ctx.rect(x, y, w, h);
}
