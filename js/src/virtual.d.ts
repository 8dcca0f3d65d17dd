/** Text of the bundled layout worker, produced by build.mjs (and by the vitest config's alias). */
declare module "virtual:layout-worker" {
  const source: string;
  export default source;
}
/** The stylesheet, inlined as text by the bundler. */
declare module "*.css" {
  const css: string;
  export default css;
}
