/**
 * The browser step of the tests whose backend needs clusters of its own (a streaming replica,
 * shards: tests/system/test_console_browser.py), which the shared Playwright run cannot host:
 * signs in on the dashboard's form, then visits each page of a plan and waits for each of its
 * texts, taking a full-page screenshot of each.
 *
 *   node e2e/console-pages.mjs <dashboard URL, e.g. http://127.0.0.1:8123/> <username> <password>
 *                              <plan.json> <screenshot directory>
 *
 * plan.json: [{"path": "jobs", "expect": ["Read from a replica · \\d+\\.\\d s behind"],
 *              "rows": ["emails"], "shot": "replica-jobs"}, ...]: each `expect` a regular
 * expression some element's text matches, each `rows` a text some table row holds; then
 * `clicks` in order (`{"label": "..."}` a control by its label, `{"button": "<regexp>"}` a button
 * by its name) and `then`, patterns as `expect`'s, waited for after them. Prints a
 * JSON line with the texts it found (the sidebar's read source and the alerts) per step.
 * Exits 0 when every step passed, 1 otherwise; page errors, console errors and 5xx answers
 * fail it too.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { watchedBrowser } from "./chromium.mjs";

const [base, username, password, planPath, shots] = process.argv.slice(2);
if (!base || !username || !password || !planPath || !shots) {
  console.error("usage: node e2e/console-pages.mjs <dashboard URL> <username> <password> <plan.json> <dir>");
  process.exit(2);
}
const plan = JSON.parse(readFileSync(planPath, "utf8"));

const seen = [];
const { problems, run } = await watchedBrowser({ name: "console", width: 1440, timeout: 30_000 });
await run(async (page) => {
  await page.goto(new URL("login", base).href);
  await page.getByLabel("Username").fill(username);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  for (const step of plan) {
    await page.goto(new URL(step.path, base).href);
    for (const pattern of step.expect ?? []) {
      try {
        await page.getByText(new RegExp(pattern)).first().waitFor();
      } catch {
        problems.push(`${step.path}: no text matches /${pattern}/`);
      }
    }
    for (const text of step.rows ?? []) {
      try {
        await page.getByRole("row").filter({ hasText: text }).first().waitFor();
      } catch {
        problems.push(`${step.path}: no row holds ${JSON.stringify(text)}`);
      }
    }
    for (const click of step.clicks ?? []) {
      const target = click.label
        ? page.getByLabel(click.label, { exact: true })
        : page.getByRole("button", { name: new RegExp(click.button) });
      await target.first().click();
    }
    for (const pattern of step.then ?? []) {
      try {
        await page.getByText(new RegExp(pattern)).first().waitFor();
      } catch {
        problems.push(`${step.path}: after its clicks, no text matches /${pattern}/`);
      }
    }
    const texts = async (locator) => (await locator.allInnerTexts()).map((t) => t.trim()).filter(Boolean);
    seen.push({
      path: step.path,
      status: await texts(page.locator(".read-source")),
      alerts: await texts(page.getByRole("alert")),
      rows: (await page.getByRole("row").count()) - 1,
    });
    if (step.shot) await page.screenshot({ path: join(shots, `${step.shot}.png`), fullPage: true });
  }
});
console.log(JSON.stringify(seen));
if (problems.length) {
  console.error(problems.join("\n"));
  process.exit(1);
}
