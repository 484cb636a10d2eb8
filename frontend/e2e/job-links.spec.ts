/**
 * What a job's page says about the jobs it is tied to, on jobs the run's real workers ran:
 * the Dependencies panel (what it waits for, what waits for it, each a link), a dependant
 * cancelled by a failed dependency with the reason in its timeline (and a Retry that says to
 * retry that dependency first), a waiting job that, cancelled and retried, waits again, and
 * follows its dependency live; and the
 * concurrency-key notice: a job waiting for its key says so, with the key's limit and how many
 * of the key run now, and runs once the key is free.
 */
import { type Job, badge, expect, shot, test, timelineKinds, waitForStatus } from "./fixtures";

test("a group's final job links both ways and, after a failure in the group, says why it was cancelled", async ({
  page,
  api,
  backend,
}) => {
  const message = `e2e group failure ${test.info().testId}`;
  const { jobs } = await api.post<{ jobs: Job[] }>("jobs/bulk/", {
    jobs: [
      { type: "noop", payload: {}, queue: backend.queue },
      { type: "fail", payload: { permanent: true, message }, queue: backend.queue },
      { type: "noop", payload: { final: true }, queue: backend.queue, after: [{ item: 0 }, { item: 1 }] },
    ],
  });
  const [ok, bad, final] = jobs;
  await api.waitForStatus(final.id, "cancelled");

  await page.goto(`/jobs/${final.id}`);
  await waitForStatus(page, "cancelled");
  const panel = page.locator("section[aria-labelledby=dependencies-title]");
  await expect(panel.getByRole("heading", { name: "Dependencies" })).toBeVisible();
  const waitsFor = panel.getByRole("list", { name: "Waits for" });
  await expect(panel).toContainText("Waits for (2, 1 failed)");
  await expect(panel).not.toContainText("not finished yet");
  await expect(waitsFor.getByRole("listitem")).toHaveCount(2);
  await expect(waitsFor.getByRole("listitem").filter({ hasText: `#${ok.id}` })).toContainText("succeeded");
  await expect(waitsFor.getByRole("listitem").filter({ hasText: `#${bad.id}` })).toContainText("failed");
  // The reason, in the timeline: which job it waited for, and what became of it.
  const cancelled = page.locator('[data-testid=events-timeline] > li[data-kind="cancelled"]');
  await expect(cancelled).toContainText(`cancelled: job ${bad.id}, which it waited for, failed`);
  expect(await timelineKinds(page)).toEqual(expect.arrayContaining(["created", "blocked", "cancelled"]));
  // Retrying it alone could only cancel it again: the page says which job to retry first.
  await page.getByRole("button", { name: "Retry", exact: true }).click();
  await expect(page.getByTestId("action-outcome")).toContainText(`retry job ${bad.id} first`);
  expect((await api.job(final.id)).status).toBe("cancelled");

  // The link leads to the failed job, whose page lists what waited for it.
  await waitsFor.getByRole("link", { name: `#${bad.id}` }).click();
  await page.waitForURL(new RegExp(`/jobs/${bad.id}$`));
  await waitForStatus(page, "failed");
  const waitedBy = page
    .locator("section[aria-labelledby=dependencies-title]")
    .getByRole("list", { name: "Waited for by" });
  await expect(waitedBy.getByRole("listitem")).toHaveCount(1);
  await expect(waitedBy.getByRole("link", { name: `#${final.id}` })).toBeVisible();
  await expect(waitedBy).toContainText("cancelled");
  await expect(page.getByRole("list", { name: "Waits for" })).toHaveCount(0);
});

test("a job waiting for a queued job shows it waits, waits again when retried, and follows its dependency's cancel", async ({
  page,
  api,
  backend,
}) => {
  // The dependency sits on a queue no worker serves: it stays queued until the test acts.
  const upstream = await api.createJob("noop", {}, { queue: backend.idleQueue });
  const waiting = await api.createJob("noop", {}, { after: [upstream.id] });
  expect(waiting.status).toBe("waiting");

  await page.goto(`/jobs/${waiting.id}`);
  await waitForStatus(page, "waiting");
  const panel = page.locator("section[aria-labelledby=dependencies-title]");
  await expect(panel).toContainText("Waits for (1, 1 not finished yet)");
  await expect(panel.getByRole("list", { name: "Waits for" }).getByRole("listitem")).toContainText("queued");
  await expect(page.locator('[data-testid=events-timeline] > li[data-kind="blocked"]')).toContainText(
    `waiting for job ${upstream.id}`,
  );

  // Cancelled by hand and retried, it waits again for its still-queued dependency.
  await api.cancel(waiting.id);
  await waitForStatus(page, "cancelled");
  await page.getByRole("button", { name: "Retry", exact: true }).click();
  await expect(page.getByTestId("action-outcome")).toContainText("Retried: the job waits again");
  await waitForStatus(page, "waiting");
  // The status and the timeline are two queries, refreshed apart: wait for the timeline too.
  await expect.poll(async () => (await timelineKinds(page)).slice(-2)).toEqual(["retried", "blocked"]);
  await expect(page.locator('[data-testid=events-timeline] > li[data-kind="blocked"]').last()).toContainText(
    `waiting again for job ${upstream.id}`,
  );

  await api.cancel(upstream.id);
  await waitForStatus(page, "cancelled");
  await expect(page.locator('[data-testid=events-timeline] > li[data-kind="cancelled"]').last()).toContainText(
    `cancelled: job ${upstream.id}, which it waited for, was cancelled`,
  );
  await expect(panel.getByRole("list", { name: "Waits for" }).getByRole("listitem")).toContainText("cancelled");
});

test("a job waiting for its concurrency key says why, with the key's limit and what runs, then runs", async ({
  page,
  api,
}) => {
  const key = `e2e-customer-${test.info().testId}`;
  const holder = await api.createJob("sleep", { seconds: 120 }, { concurrency_key: key });
  await api.waitForStatus(holder.id, "running");
  const next = await api.createJob("noop", {}, { concurrency_key: key });

  await page.goto(`/jobs/${next.id}`);
  await waitForStatus(page, "queued");
  const notice = page.getByTestId("concurrency-key");
  await expect(notice).toContainText(
    `Waiting for concurrency key ${key} · at most 1 at once, held by #${holder.id}: it runs when that job finishes`,
  );
  // The Progress card agrees: it waits for the key, not for a worker.
  await expect(page.getByTestId("progress-message")).toContainText(
    `Waiting for its concurrency key (held by #${holder.id})`,
  );
  // The holder is a link away.
  await expect(notice.getByRole("link", { name: `#${holder.id}` })).toHaveAttribute(
    "href",
    new RegExp(`/jobs/${holder.id}$`),
  );
  // Still waiting a while later: the run's four threads are free, the key is not.
  await page.waitForTimeout(1500);
  expect(await badge(page).getAttribute("data-status")).toBe("queued");
  await shot(page, "job-key-wait-light-1440", { fullPage: false });

  // The holder's page names the same key without a wait.
  await page.goto(`/jobs/${holder.id}`);
  await waitForStatus(page, "running");
  await expect(page.getByTestId("concurrency-key")).toContainText(`Concurrency key ${key}`);
  await expect(page.getByTestId("concurrency-key")).toContainText("1 running now: this job");
  await expect(page.getByTestId("concurrency-key")).not.toContainText("Waiting");

  // Free the key: the waiting job runs, and its page no longer says it waits.
  await api.cancel(holder.id);
  await page.goto(`/jobs/${next.id}`);
  await waitForStatus(page, "succeeded");
  await expect(page.getByTestId("concurrency-key")).toContainText(`Concurrency key ${key}`);
  await expect(page.getByTestId("concurrency-key")).toContainText("0 running now");
});
