// @vitest-environment node
/**
 * Pages own data: the lint boundary (eslint.config.js) keeps views and components to what they
 * are given. This runs ESLint as `npm run lint` does: on a view that fetches for itself (the
 * rule must refuse it, naming each import), on one that imports only types (allowed), and on
 * every view and component in the tree (none crosses the boundary).
 */
import { ESLint } from "eslint";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const cwd = fileURLToPath(new URL("..", import.meta.url));
const RULE = "@typescript-eslint/no-restricted-imports";

async function boundaryErrors(code: string, filePath: string) {
  const [result] = await new ESLint({ cwd }).lintText(code, { filePath });
  return result.messages.filter((m) => m.ruleId === RULE).map((m) => m.line);
}

describe("the data boundary", { timeout: 60_000 }, () => {
  it("refuses a view or component that queries, sends a request or renders a page or panel", async () => {
    const code = [
      'import { useQuery } from "@tanstack/react-query";',
      'import { jobListOptions } from "../api/jobs";',
      'import { api } from "../api/client";',
      'import { ThroughputPanel } from "../panels/ThroughputPanel";',
      'import { JobsPage } from "../pages/JobsPage";',
      "export const used = [useQuery, jobListOptions, api, ThroughputPanel, JobsPage];",
      "",
    ].join("\n");
    expect(await boundaryErrors(code, "src/views/Probe.tsx")).toEqual([1, 2, 3, 4, 5]);
    expect(await boundaryErrors(code, "src/components/Probe.tsx")).toEqual([1, 2, 3, 4, 5]);
    // A page may: it owns its data.
    expect(await boundaryErrors(code, "src/pages/Probe.tsx")).toEqual([]);
  });

  it("lets them import types, the client's error helpers and the refresh settings", async () => {
    const code = [
      'import type { UseMutationResult } from "@tanstack/react-query";',
      'import type { QueueAction } from "../api/queues";',
      'import type { Job } from "../api/types";',
      'import { isApiError } from "../api/client";',
      'import { useRefreshSettings } from "../api/polling";',
      "export type T = [UseMutationResult, QueueAction, Job];",
      "export const used = [isApiError, useRefreshSettings];",
      "",
    ].join("\n");
    expect(await boundaryErrors(code, "src/components/Probe.tsx")).toEqual([]);
  });

  it("holds for every view and component of the dashboard", async () => {
    const results = await new ESLint({ cwd }).lintFiles(["src/views", "src/components"]);
    const crossing = results.flatMap((r) =>
      r.messages.filter((m) => m.ruleId === RULE).map((m) => `${r.filePath}:${m.line} ${m.message}`),
    );
    expect(crossing).toEqual([]);
  });
});
