import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { FRONTEND, startBackend } from "./backend";
import { CHROMIUM } from "./chromium.mjs";

/** Playwright's global setup: the backend for the whole run; what it returns is the teardown. */
export default async function globalSetup() {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `Chromium not found at ${CHROMIUM}. Install it (Debian: apt-get install chromium) or set CHROMIUM_PATH.`,
    );
  // This run's pictures only.
  rmSync(join(FRONTEND, "test-results", "screenshots"), { recursive: true, force: true });
  const { info, stop } = await startBackend();
  // The workers Playwright starts after this inherit the environment.
  process.env.E2E_BACKEND = JSON.stringify(info);
  return stop;
}
