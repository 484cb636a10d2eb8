import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

/**
 * Debian's Chromium (/usr/bin/chromium, or $CHROMIUM_PATH) as the browser tests start it: headless,
 * without the background services whose connections this kind of machine refuses.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** The command-line flags; `headed` drops --headless (for watching a run). */
export function chromiumArgs({ headed = false } = {}) {
  return [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ].filter((a) => !(headed && a === "--headless"));
}

/**
 * A script's browser (adoption.mjs, console-pages.mjs): Chromium with a throwaway profile, one
 * page whose page errors, console errors and 5xx answers are collected in `problems`, and
 * `run(steps)` that runs the steps, adds what they threw to `problems`, closes the browser and
 * deletes the profile.
 */
export async function watchedBrowser({ name, width, timeout, failedRequests = false }) {
  const profile = mkdtempSync(join(tmpdir(), `jobqueue-${name}-`));
  const problems = [];
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width, height: 900 },
    args: chromiumArgs(),
    timeout: 30_000,
  });
  context.setDefaultTimeout(timeout);
  const page = context.pages()[0] ?? (await context.newPage());
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) problems.push(`console: ${m.text()}`);
  });
  page.on("response", (r) => {
    if (r.status() >= 500) problems.push(`HTTP ${r.status()} from ${r.request().method()} ${r.url()}`);
  });
  if (failedRequests) page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()}`));
  const run = async (steps) => {
    try {
      await steps(page);
    } catch (error) {
      problems.push(String(error?.stack ?? error));
    } finally {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    }
  };
  return { page, problems, run };
}
