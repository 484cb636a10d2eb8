/** The periodic jobs page: the run's JOB_PERIODIC entry, its cron, its last and next run, its jobs. */
import { PHONE, expect, shot, test } from "./fixtures";

test("the run's schedule with its cron, next and last run, and a link to its jobs", async ({ page, backend }) => {
  await page.goto("/");
  await page.getByRole("link", { name: "Periodic jobs" }).click();
  await expect(page.getByRole("heading", { name: "Periodic jobs" })).toBeVisible();
  const row = page.locator(`[data-testid=schedules-table] tr[data-schedule="${backend.schedule}"]`);
  await expect(row.getByTestId("schedule-cron")).toHaveText("* * * * *");
  await expect(row.getByTestId("schedule-next")).toHaveText(/^in /);
  // A worker enqueues the latest due tick when it starts: the last run links to its job.
  await expect(row.getByTestId("schedule-last").getByRole("link")).toBeVisible({ timeout: 20_000 });
  await shot(page, "schedules");
  await row.getByRole("link", { name: "noop jobs" }).click();
  await page.waitForURL(/\/jobs\?type=noop&queue=/);
  await expect(page.locator("[data-testid=jobs-table] tbody tr").first()).toBeVisible();
  await page.goto("/schedules");
  await expect(row).toBeVisible();
  await page.setViewportSize(PHONE);
  await shot(page, "schedules-phone", { fullPage: false });
});

test("run a schedule now, pause and resume it, and read its tick history", async ({ page, api, backend }) => {
  await page.goto("/schedules");
  const row = page.locator(`[data-testid=schedules-table] tr[data-schedule="${backend.schedule}"]`);
  await expect(row).toBeVisible();
  // Run now: a job enqueued at once, linked from the row, and first in the tick history.
  await row.getByRole("button", { name: "Run now" }).click();
  const outcome = row.getByTestId("schedule-run-outcome");
  await expect(outcome).toContainText("Enqueued #");
  const ran = Number((await outcome.getByRole("link").innerText()).slice(1));
  await api.waitForStatus(ran, "succeeded");
  await row.getByRole("button", { name: "Tick history" }).click();
  const history = page.getByTestId(`ticks-${backend.schedule}`);
  const manual = history.locator(`tr[data-job="${ran}"]`);
  await expect(manual).toContainText(/^run now, /);
  await expect(manual.locator(".badge")).toHaveAttribute("data-status", "succeeded", { timeout: 20_000 });
  await expect(manual).toContainText(/ran .*ago|ran just now/);
  await expect(manual.getByRole("link", { name: `#${ran}` })).toHaveAttribute("href", new RegExp(`/jobs/${ran}$`));
  await shot(page, "schedules-ticks");
  // Pause: marked paused, no next run; the API agrees. Resume: the next run is back.
  await row.getByRole("button", { name: "Pause", exact: true }).click();
  await expect(row.getByTestId("schedule-paused")).toHaveText("paused");
  await expect(row.getByTestId("schedule-next")).toHaveText("paused");
  const listed = async () =>
    (await api.get<{ name: string; paused: boolean }[]>("schedules/")).find((s) => s.name === backend.schedule)!;
  expect((await listed()).paused).toBe(true);
  await shot(page, "schedules-paused", { fullPage: false });
  await row.getByRole("button", { name: "Resume", exact: true }).click();
  await expect(row.getByTestId("schedule-paused")).toHaveCount(0);
  await expect(row.getByTestId("schedule-next")).toHaveText(/^in /);
  expect((await listed()).paused).toBe(false);
  await row.getByRole("button", { name: "Hide tick history" }).click();
  await expect(history).toHaveCount(0);
});

test("at 1440 px the periodic jobs table fits its card: every row's Run now whole, the names in view", async ({
  page,
  backend,
}) => {
  // The demo's kind of entries beside the run's own: long names, a dotted task path, a tick
  // whose job is gone, a paused one and an invalid one (the API's answer, extended).
  await page.route("**/api/v1/schedules/", async (route) => {
    const real = (await (await route.fetch()).json()) as Record<string, unknown>[];
    const base = real[0];
    const ago = (s: number) => new Date(Date.now() - s * 1000).toISOString();
    const later = (s: number) => new Date(Date.now() + s * 1000).toISOString();
    const extra = [
      {
        ...base,
        name: "nightly-billing-reconciliation-report",
        type: "generate_billing_reconciliation_report",
        cron: "0 3 * * *",
        timezone: "Europe/Paris",
        queue: "reports-and-exports",
        priority: 5,
        max_attempts: 5,
        last_tick_at: ago(3 * 3600),
        last_job: null,
        next_run_at: later(20 * 3600),
      },
      {
        ...base,
        name: "rebuild-search-index",
        type: null,
        task: "demo.tasks.rebuild_search_index_for_every_tenant",
        source: "decorator",
        cron: "*/15 * * * *",
        timezone: "America/Los_Angeles",
        paused: true,
      },
      {
        ...base,
        name: "cleanup-expired-sessions-and-tokens",
        cron: "0 */6 * * *",
        valid: false,
        problems: ["type 'cleanup_sessions' is not registered: the workers skip this entry"],
        next_run_at: null,
      },
    ];
    await route.fulfill({ json: [...real, ...extra] });
  });
  await page.goto("/schedules");
  const table = page.getByTestId("schedules-table");
  await expect(table.locator("tbody tr")).toHaveCount(4);
  await shot(page, "schedules-wide-1440", { fullPage: false });
  const wrap = page.locator(".table-wrap", { has: table });
  const fit = await wrap.evaluate((el) => ({ scroll: el.scrollWidth, client: el.clientWidth }));
  expect(fit.scroll, "the table is no wider than its card").toBeLessThanOrEqual(fit.client + 1);
  const card = await wrap.boundingBox();
  for (const button of await table.getByRole("button", { name: "Run now" }).all()) {
    const b = (await button.boundingBox())!;
    expect(b.x + b.width, "Run now ends inside the card").toBeLessThanOrEqual(card!.x + card!.width + 1);
    expect(await button.evaluate((el) => el.scrollWidth <= el.clientWidth), "its label is whole").toBe(true);
  }
  // Clicking it leaves the names where they were: nothing scrolls sideways.
  const name = table.locator(`tr[data-schedule="${backend.schedule}"] strong`);
  const before = (await name.boundingBox())!.x;
  await table.locator(`tr[data-schedule="${backend.schedule}"]`).getByRole("button", { name: "Run now" }).click();
  await expect(page.getByTestId("schedule-run-outcome")).toBeVisible();
  expect((await name.boundingBox())!.x).toBe(before);
  await expect(name).toBeInViewport();
  // The page polls on: a request the route holds as the test ends is not an error of the run.
  await page.unrouteAll({ behavior: "ignoreErrors" });
});
