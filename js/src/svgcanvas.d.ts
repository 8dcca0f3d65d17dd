/** svgcanvas (MIT, a maintained fork of gliffy's canvas2svg) ships no types: the part of it the pictures use. */
declare module "svgcanvas" {
  export interface ContextOptions { width: number; height: number; document?: Document; ctx?: CanvasRenderingContext2D }
  /** A 2D context that builds an SVG scene graph as it is drawn on. */
  export class Context {
    constructor(options: ContextOptions);
    /** the <svg> element drawn so far */
    getSvg(): SVGSVGElement;
    /** the element the last drawing call made (a path after fill/stroke, a text after fillText) */
    __currentElement: Element;
  }
}
