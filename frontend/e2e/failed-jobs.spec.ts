/** The failed-jobs page (the dead letter): a failed job's row, retried from there. */
import { expect, shot, test, timelineKinds, waitForStatus } from "./fixtures";

test("a permanently failed job is listed with its error and retried from the page", async ({ page, api }) => {
  const message = `e2e permanent failure ${Date.now().toString(36)}`;
  const { id } = await api.createJob("fail", { permanent: true, message });
  await api.waitForStatus(id, "failed");
  await page.goto("/");
  await page.getByRole("link", { name: /Failed jobs/ }).click();
  await expect(page.getByRole("heading", { name: "Failed jobs" })).toBeVisible();
  const row = page.locator(`[data-testid=failed-table] tr[data-job-id="${id}"]`);
  await expect(row, "the failed row shows the last error").toContainText(message);
  await shot(page, "failed-jobs");
  await row.getByRole("button", { name: `Retry job ${id}` }).click();
  await expect(page.getByTestId("action-outcome")).toHaveText(`Retried job #${id}: queued again.`);
  await page.goto(`/jobs/${id}`);
  await expect(page.locator('[data-testid=events-timeline] > li[data-kind="retried"]')).toBeVisible();
  // Permanent: it fails again on the retry, with a second attempt counted.
  await waitForStatus(page, "failed");
  await expect(page.locator('[data-testid=events-timeline] > li[data-kind="failed"]')).toHaveCount(2);
  const kinds = await timelineKinds(page);
  expect(kinds.indexOf("retried"), `retried follows the first failure: ${kinds}`).toBeGreaterThan(
    kinds.indexOf("failed"),
  );
  await shot(page, "job-failed-retried");
});

test("bulk on the failed-jobs page: retry the selected, delete with a count and a confirmation", async ({
  page,
  api,
}) => {
  // A priority no other spec uses scopes the page to these three.
  const jobs = await api.createJobs(3, "fail", { permanent: true, message: "e2e bulk failure" }, { priority: 77 });
  for (const j of jobs) await api.waitForStatus(j.id, "failed");
  await page.goto(`/failed?priority=77&queue=${encodeURIComponent(api.backend.queue)}`);
  const rowOf = (id: number) => page.locator(`[data-testid=failed-table] tr[data-job-id="${id}"]`);
  for (const j of jobs) await expect(rowOf(j.id)).toBeVisible();
  await expect(page.locator("[data-testid=failed-table] tbody tr")).toHaveCount(3);
  // Retry two from the one selection bar (the jobs list's), the count on the button.
  await rowOf(jobs[0].id).getByRole("checkbox").check();
  await rowOf(jobs[1].id).getByRole("checkbox").check();
  await expect(page.locator(".selection-bar"), "one selection bar").toHaveCount(1);
  await page.getByTestId("bulk-actions").getByRole("button", { name: "Retry 2…" }).click();
  await page.getByTestId("confirm-bulk").getByRole("button", { name: "Yes, retry 2 jobs" }).click();
  await expect(page.getByTestId("action-outcome")).toHaveText("Retried 2 jobs.");
  // Permanent failures: they come back; wait for both to be failed again (attempt 2).
  for (const j of jobs.slice(0, 2))
    await expect.poll(async () => (await api.job(j.id)).attempts, { message: `#${j.id} tried again` }).toBe(2);
  for (const j of jobs.slice(0, 2)) await api.waitForStatus(j.id, "failed");
  // Delete every row on the page (all three back), asked first with the count.
  await expect(page.locator("[data-testid=failed-table] tbody tr")).toHaveCount(3);
  await page.getByRole("checkbox", { name: "Select every job on this page" }).check();
  const bar = page.getByTestId("bulk-actions");
  await expect(bar).toContainText("3 selected.");
  await bar.getByRole("button", { name: "Delete 3…" }).click();
  const confirm = page.getByTestId("confirm-bulk");
  await expect(confirm).toContainText("Delete 3 jobs? Only finished jobs are deleted");
  await shot(page, "failed-bulk-confirm", { fullPage: false });
  await confirm.getByRole("button", { name: "Yes, delete 3 jobs" }).click();
  // The delete's outcome replaces the retry's: one notice, the latest.
  await expect(page.getByTestId("action-outcome")).toHaveText("Deleted 3 jobs.");
  await expect(page.locator(".notice.success")).toHaveCount(1);
  await expect(page.getByText("No failed jobs")).toBeVisible();
  for (const j of jobs) expect(await api.exists(j.id), `#${j.id} deleted`).toBe(false);
});

test("retry every failed job matching the filters, asked first with the count", async ({ page, api }) => {
  // A priority no other spec uses, and a search: filters the old "retry all" (by type only) refused.
  const message = `e2e retry-all ${Date.now().toString(36)}`;
  const [job] = await api.createJobs(1, "fail", { permanent: true, message }, { priority: 78 });
  await api.waitForStatus(job.id, "failed");
  await page.goto(`/failed?priority=78&search=${encodeURIComponent(message)}`);
  await page.getByRole("checkbox", { name: "Select every job on this page" }).check();
  const bar = page.getByTestId("bulk-actions");
  await bar.getByRole("button", { name: "Retry 1…" }).click();
  await expect(page.getByTestId("confirm-bulk")).toContainText("Retry 1 job?");
  await page.getByRole("button", { name: "Keep them" }).click();
  expect((await api.job(job.id)).status, "kept: nothing retried").toBe("failed");
  await bar.getByRole("button", { name: "Retry 1…" }).click();
  await page.getByRole("button", { name: "Yes, retry 1 job" }).click();
  await expect(page.getByTestId("action-outcome")).toHaveText("Retried 1 job.");
  await expect.poll(async () => (await api.job(job.id)).attempts).toBe(2);
});
