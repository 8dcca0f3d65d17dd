import { describe, expect, it } from "vitest";
import { paneToSelect } from "../src/entries/nway-widget";

describe("the N-way widget's selection from Python", () => {
  it("selects in the first pane selected_all names, and clears on none", () => {
    expect(paneToSelect([4, 7, null])).toEqual([0, 4]);
    expect(paneToSelect([null, null, 12])).toEqual([2, 12]);
    expect(paneToSelect([null, null, null])).toEqual([0, null]);
    expect(paneToSelect([])).toEqual([0, null]);
    expect(paneToSelect(undefined)).toEqual([0, null]);
  });
});
