/**
 * The dashboard's browser tests (`npx playwright test`, or `make test-e2e`): Debian's Chromium
 * (no browser download) against the real backend, which e2e/global-setup.ts starts once for the
 * run. One worker: the backend, its job workers and its database are shared by every spec.
 */
import { defineConfig } from "@playwright/test";
import { CHROMIUM, chromiumArgs } from "./e2e/chromium.mjs";

const HEADED = process.env.E2E_HEADED === "1";

export default defineConfig({
  testDir: "./e2e",
  outputDir: "./test-results/artifacts",
  globalSetup: "./e2e/global-setup.ts",
  workers: 1,
  fullyParallel: false,
  forbidOnly: !!process.env.CI,
  retries: 0,
  // The whole run; each test has its own limit below.
  globalTimeout: Number(process.env.E2E_TIMEOUT_SECONDS ?? 600) * 1000,
  timeout: 120_000,
  // Generous: the machine may be shared with other work (2 cores).
  expect: {
    timeout: 20_000,
    toHaveScreenshot: { maxDiffPixelRatio: 0.01, animations: "disabled", caret: "hide", scale: "css" },
  },
  snapshotPathTemplate: "{testDir}/__screenshots__/{testFilePath}/{arg}{ext}",
  reporter: [["list"], ["html", { open: "never", outputFolder: "./test-results/report" }]],
  use: {
    viewport: { width: 1440, height: 900 },
    actionTimeout: 30_000,
    navigationTimeout: 20_000,
    trace: "retain-on-failure",
    screenshot: "only-on-failure",
    locale: "en-GB",
    timezoneId: "UTC",
    launchOptions: {
      executablePath: CHROMIUM,
      headless: !HEADED,
      args: chromiumArgs({ headed: HEADED }),
    },
  },
  projects: [{ name: "chromium", use: { browserName: "chromium" } }],
});
