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
import { watchedBrowser } from "./chromium.mjs";

const argv = process.argv.slice(2);
const shotAt = argv.indexOf("--screenshot");
const screenshot = shotAt >= 0 ? argv.splice(shotAt, 2)[1] : null;
const [base, username, password, ...types] = argv;
if (!base || !username || !password || types.length === 0) {
  console.error("usage: node e2e/adoption.mjs <dashboard URL> <username> <password> <job type>...");
  process.exit(2);
}

const { problems, run } = await watchedBrowser({
  name: "adoption",
  width: 1360,
  timeout: 15_000,
  failedRequests: true,
});
await run(async (page) => {
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
});
if (problems.length) {
  console.error(problems.join("\n"));
  process.exit(1);
}
console.log(`adoption: the dashboard at ${base} listed ${types.join(", ")} as succeeded`);
