// The real worker text is produced by build.mjs; unit tests exercise the layout functions directly.
export default "";
