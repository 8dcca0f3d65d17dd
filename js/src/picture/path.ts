/** Path data made shorter without changing what it draws (the pictures: svg-pane.ts). */

/** How many numbers each absolute path command takes (svgcanvas writes only these). */
const PATH_ARGS: Record<string, number> = { M: 2, L: 2, C: 6, Q: 4, A: 7, Z: 0 };

/** A path's `d` without what draws nothing: a line to the point the pen is already at (svgcanvas's rounded rectangles
 * have four) goes, and the spaces around command letters. A `d` holding anything else (relative commands, numbers
 * run together) is returned as it was. */
export function compactPath(d: string): string {
  const tokens = d.trim().split(/[\s,]+/);
  const out: string[] = [];
  let x = NaN, y = NaN, sx = NaN, sy = NaN;
  for (let i = 0; i < tokens.length;) {
    const cmd = tokens[i++];
    const n = PATH_ARGS[cmd];
    if (n === undefined) return d;
    const args = tokens.slice(i, i + n);
    if (args.length < n || args.some((s) => !/^-?\d*\.?\d+(?:e-?\d+)?$/.test(s))) return d;
    i += n;
    if (cmd === "Z") { out.push("Z"); x = sx; y = sy; continue; }
    const ex = args[n - 2], ey = args[n - 1];
    if (cmd === "L" && +ex === x && +ey === y) continue;
    out.push(cmd + args.join(" "));
    x = +ex; y = +ey;
    if (cmd === "M") { sx = x; sy = y; }
  }
  return out.join("");
}
