import { describe, expect, it } from "vitest";
import { compactPath } from "../src/picture/path";

describe("compactPath", () => {
  it("drops the lines to where the pen already is (svgcanvas's rounded rectangles) and the spaces", () => {
    const d = " M 7.2 3.7 L 52.9 3.7 L 52.9 3.7 A 2 2 0 0 1 55 5.7 L 55 16.2 L 55 16.2 A 2 2 0 0 1 52.9 18.3 Z";
    expect(compactPath(d)).toBe("M7.2 3.7L52.9 3.7A2 2 0 0 1 55 5.7L55 16.2A2 2 0 0 1 52.9 18.3Z");
  });
  it("keeps a line that moves, curves, and the pen's return to the subpath's start after Z", () => {
    const d = "M 0 0 L 1 0 Z L 0 0 L 2 2 C 1 1 2 2 3 3 Q 4 4 5 5 M 9 9 L 9 9";
    // after Z the pen is back at (0, 0): the line there draws nothing; so does the last one
    expect(compactPath(d)).toBe("M0 0L1 0ZL2 2C1 1 2 2 3 3Q4 4 5 5M9 9");
  });
  it("returns what it does not understand unchanged", () => {
    for (const d of ["m 1 1 l 2 2", "M 1 1 H 5", "M 1 1 L 2", "M 1.2.3 4 L 1 1", ""]) expect(compactPath(d)).toBe(d);
  });
});
