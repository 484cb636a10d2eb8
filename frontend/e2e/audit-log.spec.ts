/**
 * The audit log as an operator meets it: a queue paused from the dashboard and a job cancelled
 * through the API both show, newest first, with who did it and what changed; the action filter
 * narrows the log through the address, and a job's entry links to its page.
 */
import { expect, shot, test } from "./fixtures";

test("an operator's pause and cancel show in the audit log with who and what changed", async ({
  page,
  api,
  backend,
}) => {
  const queue = `${backend.idleQueue}-audit`;
  const job = await api.createJob("noop", {}, { queue });
  try {
    await page.goto("/queues");
    await page.getByRole("button", { name: `Pause queue ${queue}` }).click();
    await expect(page.getByRole("button", { name: `Resume queue ${queue}` })).toBeVisible();
    await api.cancel(job.id);

    await page.getByRole("link", { name: "Audit log" }).click();
    await expect(page).toHaveURL(/\/audit$/);
    const rows = page.locator("[data-testid=audit-table] tbody tr");
    const cancelled = rows.filter({ hasText: `job #${job.id}` });
    const paused = rows.filter({ hasText: `queue ${queue}` });
    await expect(cancelled).toContainText("Cancelled job");
    await expect(cancelled).toContainText(backend.username);
    await expect(cancelled).toContainText("was queued");
    await expect(paused).toContainText("Paused queue");
    await expect(paused).toContainText("paused: no → yes");
    // Newest first: the cancel came after the pause.
    const order = await rows.evaluateAll((trs) => trs.map((tr) => tr.textContent ?? ""));
    expect(order.findIndex((t) => t.includes(`job #${job.id}`))).toBeLessThan(
      order.findIndex((t) => t.includes(`queue ${queue}`)),
    );
    await shot(page, "audit-log-light-1440", { fullPage: false });

    await page.getByLabel("Action").selectOption("pause_queue");
    await expect(page).toHaveURL(/action=pause_queue/);
    await expect(paused).toBeVisible();
    await expect(cancelled).toHaveCount(0);

    await page.getByRole("button", { name: "Clear filters" }).click();
    await cancelled.getByRole("link", { name: `job #${job.id}` }).click();
    await expect(page).toHaveURL(new RegExp(`/jobs/${job.id}$`));
  } finally {
    await api.post(`queues/${encodeURIComponent(queue)}/resume/`, null);
  }
});
