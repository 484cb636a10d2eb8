/// <reference types="node" />
/**
 * The committed types must be what `npm run gen:api` makes of the committed schema, so that
 * the UI is type-checked against the API as it is (and `make schema` keeps openapi.yaml itself
 * in step with the backend).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const FRONTEND = resolve(__dirname, "..", "..");

describe("generated API types", () => {
  it("match openapi.yaml (run `npm run gen:api` after `make schema`)", () => {
    const dir = mkdtempSync(join(tmpdir(), "gen-api-"));
    try {
      const out = join(dir, "schema.d.ts");
      execFileSync(
        process.execPath,
        [
          join(FRONTEND, "node_modules", "openapi-typescript", "bin", "cli.js"),
          join(FRONTEND, "openapi.yaml"),
          "-o",
          out,
        ],
        {
          cwd: FRONTEND,
          stdio: "pipe",
        },
      );
      const committed = readFileSync(join(FRONTEND, "src", "api", "schema.d.ts"), "utf8");
      expect(readFileSync(out, "utf8") === committed, "src/api/schema.d.ts is stale: run `npm run gen:api`").toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
