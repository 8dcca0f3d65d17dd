import { describe, expect, it } from "vitest";
import { displaySource, packageRelative, sharedFolder } from "../src/model/paths";

describe("source paths for reading", () => {
  it("shows a library file from its package folder", () => {
    const src = "/home/u/.venv/lib/python3.11/site-packages/transformers/models/gpt2/modeling_gpt2.py:88";
    expect(packageRelative(src)).toBe("transformers/models/gpt2/modeling_gpt2.py:88");
    expect(packageRelative("C:\\Py\\Lib\\site-packages\\torch\\nn\\functional.py:12")).toBe("torch\\nn\\functional.py:12");
    expect(packageRelative("/usr/lib/python3/dist-packages/numpy/core.py:3")).toBe("numpy/core.py:3");
    expect(packageRelative("/work/model.py:3")).toBeNull();
    expect(displaySource(src, "/work/")).toBe("transformers/models/gpt2/modeling_gpt2.py:88");
  });

  it("shows the graph's own files from the folder they share", () => {
    const root = sharedFolder(["/work/proj/model.py:3", "/work/proj/layers/attn.py:40", null]);
    expect(root).toBe("/work/proj/");
    expect(displaySource("/work/proj/layers/attn.py:40", root)).toBe("layers/attn.py:40");
    // a file elsewhere keeps its whole path
    expect(displaySource("/tmp/other.py:1", root)).toBe("/tmp/other.py:1");
  });

  it("does not call the file system's root a shared folder", () => {
    expect(sharedFolder(["/a/x.py:1", "/b/y.py:2"])).toBe("");
    expect(sharedFolder(["C:\\a\\x.py:1", "C:\\b\\y.py:2"])).toBe("");
    expect(sharedFolder([])).toBe("");
    expect(displaySource("/a/x.py:1", "")).toBe("/a/x.py:1");
  });
});
