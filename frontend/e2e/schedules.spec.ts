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
