/**
 * Every page in light and dark, at 1440x900 and 390 wide, to test-results/screenshots/ (for a
 * person to look at), each checked by axe-core (WCAG 2 A and AA: no violation), and comparisons against committed baselines (e2e/__screenshots__/) for
 * the pages that do not move: login and the create-job form, counters masked.
 *
 * `npx playwright test e2e/screenshots.spec.ts --update-snapshots` rewrites the baselines.
 */
import AxeBuilder from "@axe-core/playwright";
import type { Page } from "@playwright/test";
import { DESKTOP, type JobsApi, PHONE, expect, shot, test, waitForStatus } from "./fixtures";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Charts animate and live data refreshes: a moment to settle before a picture. */
async function settle(page: Page) {
  await page.evaluate(() => document.fonts.ready);
  await sleep(400);
}

/** The full page; at 1440 also the first screen (`-top`, the docs' pictures); its layout checked. */
async function pictures(page: Page, name: string, desktop: boolean) {
  await shot(page, name);
  if (desktop) await shot(page, `${name}-top`, { fullPage: false });
  await checkLayout(page, name, desktop);
  await checkAccessibility(page, name);
}

/** axe-core's WCAG 2 A and AA rules: every violation, with where it is. */
async function checkAccessibility(page: Page, what: string) {
  const { violations } = await new AxeBuilder({ page })
    .withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"])
    .analyze();
  expect
    .soft(
      violations.map(
        (v) =>
          `${v.id} (${v.impact}): ${v.help}; ${v.nodes.length} nodes, e.g. ${v.nodes
            .slice(0, 3)
            .map((n) => n.target.join(" "))
            .join(" | ")}`,
      ),
      `axe-core on ${what}`,
    )
    .toEqual([]);
}

/**
 * What the pictures showed going wrong, as checks: the page never scrolls sideways; no table
 * scrolls inside its card; on a desktop nothing sticks out of its panel (the filter's
 * Clear button, a table's last column) and the sidebar's account links are on screen; every
 * navigation link is inside the window.
 */
async function checkLayout(page: Page, what: string, desktop: boolean) {
  const problems = await page.evaluate((desktop) => {
    const out: string[] = [];
    const root = document.documentElement;
    if (root.scrollWidth > root.clientWidth + 1)
      out.push(`the page scrolls sideways (${root.scrollWidth} > ${root.clientWidth})`);
    // The account (Log out) is on screen: in the sidebar on a desktop, however many queues.
    const foot = document.querySelector<HTMLElement>(".sidebar-foot");
    if (desktop && foot && foot.getBoundingClientRect().bottom > window.innerHeight + 1)
      out.push(`the sidebar's account links are below the window (${foot.getBoundingClientRect().bottom})`);
    for (const a of document.querySelectorAll<HTMLElement>(".nav a")) {
      const r = a.getBoundingClientRect();
      if (r.left < 0 || r.right > root.clientWidth + 1)
        out.push(`nav link "${a.textContent}" is cut off (${r.left}..${r.right})`);
    }
    // At either width: a phone's tables are cards (table.cards), which fit.
    for (const w of document.querySelectorAll<HTMLElement>(".table-wrap"))
      if (w.scrollWidth > w.clientWidth + 1)
        out.push(
          `a table overflows its card (${w.scrollWidth} > ${w.clientWidth}): ${w.querySelector("table")?.dataset.testid ?? "?"}`,
        );
    if (desktop) {
      for (const panel of document.querySelectorAll<HTMLElement>(".panel")) {
        const p = panel.getBoundingClientRect();
        for (const el of panel.querySelectorAll<HTMLElement>("button, input, select, table")) {
          const r = el.getBoundingClientRect();
          if (r.width > 0 && r.right > p.right + 1 && !el.closest(".table-wrap"))
            out.push(
              `${el.tagName.toLowerCase()} "${(el.textContent ?? "").trim().slice(0, 30)}" sticks out of its panel by ${Math.round(r.right - p.right)} px`,
            );
        }
      }
    }
    return out;
  }, desktop);
  expect.soft(problems, `layout of ${what}`).toEqual([]);
}

let running: number;
let failed: number;

test.beforeAll(async ({ api }: { api: JobsApi }) => {
  // Something on every page: a job running, one failed with a traceback, one succeeded.
  running = (await api.createJob("sleep", { seconds: 600 })).id;
  failed = (await api.createJob("fail", { permanent: true, message: "card declined: insufficient funds" })).id;
  const ok = (await api.createJob("noop", { hello: "world" })).id;
  // As many queues as a real deployment has: the sidebar lists every one of them.
  for (let i = 1; i <= 11; i++) await api.createJob("noop", {}, { queue: `${api.backend.idleQueue}-q${i}` });
  // An operator's action, for the audit log's page.
  await api.cancel((await api.createJob("noop", {}, { queue: `${api.backend.idleQueue}-q1` })).id);
  await api.waitForStatus(running, "running");
  await api.waitForStatus(failed, "failed");
  await api.waitForStatus(ok, "succeeded");
});

test.afterAll(async ({ api }: { api: JobsApi }) => {
  await api.cancel(running);
});

for (const colorScheme of ["light", "dark"] as const) {
  for (const [size, viewport] of [
    ["1440", DESKTOP],
    ["390", PHONE],
  ] as const) {
    test.describe(`${colorScheme} ${size}`, () => {
      test.use({ colorScheme, viewport });
      const name = (page: string) => `${page}-${colorScheme}-${size}`;

      test("every page", async ({ page, backend }) => {
        // Fourteen pages, each pictured and checked by axe-core: on a shared, loaded machine
        // that takes longer than one page's test is given.
        test.setTimeout(300_000);
        await page.goto("/");
        await expect(page.locator(".recharts-surface").first()).toBeVisible();
        await expect(page.getByTestId("stat-running")).not.toHaveText("0");
        await settle(page);
        await pictures(page, name("overview"), size === "1440");

        // A filter applied: its Clear button shows.
        await page.goto(`/jobs?queue=${encodeURIComponent(backend.queue)}`);
        await expect(page.locator("[data-testid=jobs-table] tbody tr").first()).toBeVisible();
        await settle(page);
        await pictures(page, name("jobs"), size === "1440");

        // The payload filter applied (the job created with {hello: "world"}), the key field's
        // suggestions under it.
        await page.goto("/jobs?payload=hello:world");
        await expect(page.locator("[data-testid=jobs-table] tbody tr").first()).toBeVisible();
        await expect(page.getByLabel("Payload")).toHaveValue("hello:world");
        await settle(page);
        await pictures(page, name("jobs-payload"), size === "1440");

        await page.goto(`/jobs/${running}`);
        await waitForStatus(page, "running");
        await settle(page);
        await pictures(page, name("job-running"), size === "1440");

        await page.goto(`/jobs/${failed}`);
        await waitForStatus(page, "failed");
        await settle(page);
        await pictures(page, name("job-failed"), size === "1440");

        await page.goto("/failed");
        await expect(page.locator("[data-testid=failed-table] tbody tr").first()).toBeVisible();
        await settle(page);
        await pictures(page, name("failed"), size === "1440");

        await page.goto("/schedules");
        await expect(page.locator("[data-testid=schedules-table] tbody tr").first()).toBeVisible();
        await settle(page);
        await pictures(page, name("schedules"), size === "1440");
        // Its tick history unfolded.
        await page
          .locator(`[data-testid=schedules-table] tr[data-schedule="${backend.schedule}"]`)
          .getByRole("button", { name: "Tick history" })
          .click();
        await expect(page.getByTestId(`ticks-${backend.schedule}`).locator("tbody tr").first()).toBeVisible();
        await settle(page);
        await pictures(page, name("schedules-ticks"), size === "1440");

        await page.goto("/workers");
        await expect(page.locator("[data-testid=workers-table] tbody tr").first()).toBeVisible();
        await settle(page);
        await pictures(page, name("workers"), size === "1440");

        // Every queue, each with its sparkline of p95 waits over the last hour.
        await page.goto("/queues");
        await expect(page.locator("[data-testid=queue-sparkline] [role=img]").first()).toBeVisible();
        await settle(page);
        await pictures(page, name("queues"), size === "1440");

        await page.goto(`/queues/${encodeURIComponent(backend.queue)}`);
        await expect(page.locator("[data-testid=queue-workers] tbody tr").first()).toBeVisible();
        await settle(page);
        await pictures(page, name("queue"), size === "1440");

        await page.goto("/audit");
        await expect(page.locator("[data-testid=audit-table] tbody tr").first()).toBeVisible();
        await settle(page);
        await pictures(page, name("audit"), size === "1440");

        await page.goto("/jobs/new");
        await expect(page.getByRole("button", { name: "Create job" })).toBeVisible();
        await settle(page);
        await pictures(page, name("create-job"), size === "1440");
        // The form is the same every run: compared with its baseline (the main column only:
        // the navigation grows as pages are added).
        await expect(page.locator("main")).toHaveScreenshot(`create-job-${colorScheme}-${size}.png`);
      });

      test.describe("anonymous", () => {
        test.use({ loggedIn: false });
        test("login", async ({ page }) => {
          await page.goto("/login");
          await expect(page.getByLabel("Username")).toBeVisible();
          await settle(page);
          await pictures(page, name("login"), size === "1440");
          await expect(page).toHaveScreenshot(`login-${colorScheme}-${size}.png`, { fullPage: true });
        });
      });
    });
  }
}

test("the admin's job and event lists at 1440: no column clipped", async ({ browser, backend }) => {
  const context = await browser.newContext({
    baseURL: backend.baseURL,
    viewport: DESKTOP,
    storageState: { cookies: [], origins: [] },
  });
  const page = await context.newPage();
  await page.goto("/admin/login/");
  await page.getByLabel("Username").fill(backend.adminUsername);
  await page.getByLabel("Password").fill(backend.adminPassword);
  await page.getByRole("button", { name: /log in/i }).click();
  await expect(page.locator("#site-name")).toBeVisible();
  for (const [path, file] of [
    ["/admin/django_pg_jobqueue/jobevent/", "admin-events"],
    ["/admin/django_pg_jobqueue/job/", "admin-jobs"],
  ]) {
    await page.goto(path);
    const table = page.locator("#result_list");
    await expect(table).toBeVisible();
    await shot(page, `${file}-light-1440`);
    // The results table fits the page: its last column is not cut off.
    const fits = await page.evaluate(() => {
      const t = document.querySelector("#result_list")!.getBoundingClientRect();
      return {
        right: t.right,
        width: document.documentElement.clientWidth,
        scroll: document.documentElement.scrollWidth,
      };
    });
    expect(fits.right, `${path}: the table ends inside the window`).toBeLessThanOrEqual(fits.width);
    expect(fits.scroll, `${path}: no horizontal scrolling`).toBeLessThanOrEqual(fits.width);
  }
  await context.close();
});
