import { describe, expect, it } from "vitest";
import { searchNodes } from "../src/model/search";
import { model, node } from "./graphs";

describe("search", () => {
  const m = model([
    node(0, "SumBackward0", { source: "train.py:3" }),
    node(1, "MulBackward0", { module: "enc.attn", code: "y = x * w" }),
    node(2, "AccumulateGrad", { module: "enc" }),
  ], [[2, 1], [1, 0]]);

  it("matches op, module, source and code, case-insensitively, in flow order", () => {
    expect(searchNodes(m, "mulbackward")).toEqual([1]);
    expect(searchNodes(m, "ENC")).toEqual([2, 1]); // leaf first: it comes before its consumer
    expect(searchNodes(m, "train.py")).toEqual([0]);
    expect(searchNodes(m, "x * w")).toEqual([1]);
    expect(searchNodes(m, "  ")).toEqual([]);
    expect(searchNodes(m, "nothing")).toEqual([]);
  });
});
