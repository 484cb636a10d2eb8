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
