/**
 * The adoption test's browser step (tests/system/test_adoption.py): the dashboard of a host project that
 * installed the wheel, mounted under a prefix, logs in through the host's login (the admin's) and
 * lists the jobs the test enqueued.
 *
 *   node e2e/adoption.mjs <dashboard URL, e.g. http://127.0.0.1:8123/queue/> <username> <password>
 *                         <job type>... [--screenshot <file.png>]
 *
 * Exits 0 when every job type appears in the jobs list as succeeded, 1 otherwise; console errors,
 * page errors and 5xx answers fail it too.
 */
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CHROMIUM, chromiumArgs } from "./chromium.mjs";

const argv = process.argv.slice(2);
const shotAt = argv.indexOf("--screenshot");
const screenshot = shotAt >= 0 ? argv.splice(shotAt, 2)[1] : null;
const [base, username, password, ...types] = argv;
if (!base || !username || !password || types.length === 0) {
  console.error("usage: node e2e/adoption.mjs <dashboard URL> <username> <password> <job type>...");
  process.exit(2);
}

const profile = mkdtempSync(join(tmpdir(), "jobqueue-adoption-"));
const problems = [];
const context = await chromium.launchPersistentContext(profile, {
  executablePath: CHROMIUM,
  headless: true,
  viewport: { width: 1360, height: 900 },
  args: chromiumArgs(),
  timeout: 30_000,
});
context.setDefaultTimeout(15_000);
try {
  const page = context.pages()[0] ?? (await context.newPage());
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) problems.push(`console: ${m.text()}`);
  });
  page.on("response", (r) => {
    if (r.status() >= 500) problems.push(`HTTP ${r.status()} from ${r.request().method()} ${r.url()}`);
  });
  page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()}`));

  const prefix = new URL(base).pathname;
  await page.goto(new URL("jobs", base).href);
  // Anonymous: the dashboard sends us to its sign-in page, under the host's prefix. A host
  // project leaves the dashboard's password form off (JOB_API_PASSWORD_LOGIN): the page links to
  // the site's own login (here the admin's), which sends us back.
  await page.waitForURL((url) => url.pathname === `${prefix}login`);
  await page.getByRole("link", { name: "Sign in on the site" }).click();
  await page.waitForURL((url) => url.pathname.endsWith("/admin/login/"));
  await page.getByLabel("Username").fill(username);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.waitForURL((url) => url.pathname === `${prefix}jobs`);
  await page.getByRole("heading", { name: "Jobs" }).waitFor();
  for (const type of types) {
    const row = page.getByRole("row").filter({ hasText: type });
    await row.first().waitFor();
    const text = await row.first().innerText();
    if (!/succeeded/i.test(text)) problems.push(`the ${type} row does not say succeeded: ${text}`);
  }
  if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
} catch (error) {
  problems.push(String(error?.stack ?? error));
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
if (problems.length) {
  console.error(problems.join("\n"));
  process.exit(1);
}
console.log(`adoption: the dashboard at ${base} listed ${types.join(", ")} as succeeded`);
