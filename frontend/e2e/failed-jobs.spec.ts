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
  await row.getByRole("checkbox").check();
  await page.getByRole("button", { name: "Retry selected (1)" }).click();
  await expect(page.getByTestId("retry-outcome")).toContainText("Retried 1 job");
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
