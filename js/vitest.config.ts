import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    alias: { "virtual:layout-worker": new URL("./test/worker-stub.ts", import.meta.url).pathname },
  },
  test: { environment: "node", include: ["test/**/*.test.ts"] },
});
