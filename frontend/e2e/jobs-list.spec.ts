/**
 * The jobs list: rows and their states, a bad filter in the address, the refresh control, and
 * the selection bar's bulk cancel / retry / delete (the count shown, asked first).
 */
import { expect, shot, test } from "./fixtures";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test("the list, filtered to a queue, shows each job's state", async ({ page, api, backend }) => {
  const ok = await api.createJob("noop");
  const failed = await api.createJob("fail", { permanent: true, message: "e2e list failure" });
  const running = await api.createJob("sleep", { seconds: 120 });
  await api.waitForStatus(ok.id, "succeeded");
  await api.waitForStatus(failed.id, "failed");
  await api.waitForStatus(running.id, "running");
  await page.goto(`/jobs?queue=${encodeURIComponent(backend.queue)}`);
  for (const [id, status] of [
    [ok.id, "succeeded"],
    [failed.id, "failed"],
    [running.id, "running"],
  ] as const) {
    const row = page.locator(`[data-testid=jobs-table] tr[data-job-id="${id}"]`);
    await expect(row.getByTestId("status-badge"), `job #${id} is ${status}`).toHaveAttribute("data-status", status);
  }
  await shot(page, "jobs");
  await api.cancel(running.id);
  await api.waitForStatus(running.id, "cancelled");
  await expect(
    page.locator(`[data-testid=jobs-table] tr[data-job-id="${running.id}"]`).getByTestId("status-badge"),
    "the list follows the job live",
  ).toHaveAttribute("data-status", "cancelled");
});

test("a bad filter in the address: what is wrong with it, and a way to clear it", async ({ page, api, backend }) => {
  const { id } = await api.createJob("noop");
  await page.goto(`/jobs?status=bogus&queue=${encodeURIComponent(backend.queue)}`);
  const problem = page.getByTestId("filter-problem");
  await expect(problem).toContainText("Status “bogus”");
  await expect(page.getByText("Connection problem"), "a refused filter is not a connection problem").toHaveCount(0);
  await expect(page.getByLabel("Status", { exact: true }), "the dropdown shows the value asked for").toHaveValue(
    "status:bogus",
  );
  await shot(page, "jobs-bad-filter", { fullPage: false });
  await problem.getByRole("button", { name: "Clear status" }).click();
  await page.waitForURL(new RegExp(`/jobs\\?queue=${encodeURIComponent(backend.queue)}$`));
  await expect(page.locator(`[data-testid=jobs-table] tr[data-job-id="${id}"]`)).toBeVisible();
  await page.goto("/jobs?priority=abc");
  await expect(page.getByTestId("filter-problem"), "?priority=abc is not ignored").toContainText("Priority “abc”");
});

test("refresh: paused, no request; resumed, it polls again; the rate is remembered", async ({ page, api, backend }) => {
  const { id } = await api.createJob("noop");
  await page.goto(`/jobs?queue=${encodeURIComponent(backend.queue)}`);
  await expect(page.locator(`[data-testid=jobs-table] tr[data-job-id="${id}"]`)).toBeVisible();
  const listRequests: number[] = [];
  page.on("request", (r) => {
    if (new URL(r.url()).pathname.endsWith("/api/v1/jobs/")) listRequests.push(Date.now());
  });
  await page.getByRole("button", { name: "Pause", exact: true }).click();
  await expect(page.getByTestId("live")).toContainText("Paused");
  await expect(page.getByRole("button", { name: "Resume", exact: true })).toHaveAttribute("aria-pressed", "true");
  const pausedAt = Date.now();
  await sleep(7_000);
  expect(
    listRequests.filter((t) => t > pausedAt + 200),
    "paused: no list request",
  ).toEqual([]);
  await page.getByRole("button", { name: "Resume", exact: true }).click();
  await expect(page.getByTestId("live")).toHaveText(/^Live/);
  const resumedAt = Date.now();
  await expect
    .poll(() => listRequests.some((t) => t >= resumedAt), { timeout: 5_000, message: "resumed, the list polls again" })
    .toBe(true);
  await page.getByLabel("Refresh", { exact: true }).selectOption({ label: "15 s" });
  await page.reload();
  await expect(page.getByLabel("Refresh", { exact: true }), "the chosen rate is remembered").toHaveValue("15000");
});

test.describe("bulk actions from the selection bar", () => {
  test("cancel, retry and delete the selected rows: the count shown, asked first", async ({ page, api }) => {
    const queue = `${api.backend.idleQueue}-pick`;
    const [a, b, c] = await api.createJobs(3, "noop", {}, { queue });
    await page.goto(`/jobs?queue=${encodeURIComponent(queue)}`);
    const bar = page.getByTestId("bulk-actions");
    const rowOf = (id: number) => page.locator(`[data-testid=jobs-table] tr[data-job-id="${id}"]`);
    await expect(bar).toContainText("Select jobs to act on them together.");
    await expect(bar.getByRole("button", { name: /^Cancel/ })).toBeDisabled();
    await rowOf(a.id).getByRole("checkbox").check();
    await rowOf(b.id).getByRole("checkbox").check();
    await expect(bar).toContainText("2 selected.");
    // Asked first, with the count; "Keep them" changes nothing.
    await bar.getByRole("button", { name: "Cancel 2…" }).click();
    const confirm = page.getByTestId("confirm-bulk");
    await expect(confirm).toContainText("Cancel 2 jobs? Only queued and running jobs are cancelled.");
    await shot(page, "jobs-bulk-confirm", { fullPage: false });
    await confirm.getByRole("button", { name: "Keep them" }).click();
    await expect(confirm).toHaveCount(0);
    expect((await api.job(a.id)).status).toBe("queued");
    await bar.getByRole("button", { name: "Cancel 2…" }).click();
    await confirm.getByRole("button", { name: "Yes, cancel 2 jobs" }).click();
    await expect(page.getByTestId("bulk-outcome")).toHaveText("Cancelled (or asked to stop) 2 jobs.");
    await expect(bar, "done: the selection is cleared").toContainText("Select jobs to act on them together.");
    for (const id of [a.id, b.id])
      await expect(rowOf(id).getByTestId("status-badge")).toHaveAttribute("data-status", "cancelled");
    await expect(rowOf(c.id).getByTestId("status-badge")).toHaveAttribute("data-status", "queued");
    // Every row on the page: the queued one is refused a retry, and the answer says so.
    await page.getByRole("checkbox", { name: "Select every job on this page" }).check();
    await expect(bar).toContainText("3 selected.");
    await bar.getByRole("button", { name: "Retry 3…" }).click();
    await expect(confirm).toContainText("Retry 3 jobs? Only failed and cancelled jobs are retried.");
    await confirm.getByRole("button", { name: "Yes, retry 3 jobs" }).click();
    await expect(page.getByTestId("bulk-outcome")).toHaveText(`Retried 2 jobs; 1 refused: #${c.id} (queued).`);
    for (const id of [a.id, b.id]) expect((await api.job(id)).status, `#${id} queued again`).toBe("queued");
    // Delete: only finished jobs go; cancel them all first.
    await page.getByRole("checkbox", { name: "Select every job on this page" }).check();
    await bar.getByRole("button", { name: "Cancel 3…" }).click();
    await confirm.getByRole("button", { name: "Yes, cancel 3 jobs" }).click();
    await expect(page.getByTestId("bulk-outcome")).toHaveText("Cancelled (or asked to stop) 3 jobs.");
    await rowOf(a.id).getByRole("checkbox").check();
    await bar.getByRole("button", { name: "Delete 1…" }).click();
    await expect(confirm).toContainText(
      "Delete 1 job? Only finished jobs are deleted, with their events; this cannot be undone.",
    );
    await confirm.getByRole("button", { name: "Yes, delete 1 job" }).click();
    await expect(page.getByTestId("bulk-outcome")).toHaveText("Deleted 1 job.");
    await expect(rowOf(a.id)).toHaveCount(0);
    expect(await api.exists(a.id)).toBe(false);
    expect(await api.exists(b.id)).toBe(true);
  });

  test("every job matching the filter, past the first page: cancel, then delete", async ({ page, api }) => {
    const queue = `${api.backend.idleQueue}-all`;
    await api.createJobs(27, "noop", {}, { queue });
    await page.goto(`/jobs?queue=${encodeURIComponent(queue)}`);
    const bar = page.getByTestId("bulk-actions");
    const confirm = page.getByTestId("confirm-bulk");
    await expect(page.locator("[data-testid=jobs-table] tbody tr")).toHaveCount(25);
    const selectAll = async () => {
      await page.getByRole("checkbox", { name: "Select every job on this page" }).check();
      await expect(bar).toContainText("25 selected.");
      await bar.getByRole("button", { name: "Select all 27 matching the filter" }).click();
      await expect(bar).toContainText("All 27 jobs matching the filter are selected.");
    };
    await selectAll();
    await bar.getByRole("button", { name: "Cancel 27…" }).click();
    await expect(confirm).toContainText("Cancel 27 jobs?");
    await confirm.getByRole("button", { name: "Yes, cancel 27 jobs" }).click();
    await expect(page.getByTestId("bulk-outcome")).toHaveText("Cancelled (or asked to stop) 27 jobs.");
    const cancelled = await api.get<{ count: number }>(`jobs/?queue=${queue}&status=cancelled`);
    expect(cancelled.count, "all 27, the second page's too").toBe(27);
    await selectAll();
    await bar.getByRole("button", { name: "Delete 27…" }).click();
    await confirm.getByRole("button", { name: "Yes, delete 27 jobs" }).click();
    await expect(page.getByTestId("bulk-outcome")).toHaveText("Deleted 27 jobs.");
    expect((await api.get<{ count: number }>(`jobs/?queue=${queue}`)).count).toBe(0);
    await expect(page.locator("[data-testid=jobs-table] tbody tr")).toHaveCount(0);
  });
});

test("one Status filter: a status, or what a queued job waits for; the list holding exactly those", async ({
  page,
  api,
}) => {
  // On a queue no worker serves: one job available now, one scheduled for later, one cancelled.
  const queue = `${api.backend.idleQueue}-states`;
  const available = await api.createJob("noop", {}, { queue });
  const scheduled = await api.createJob("noop", {}, { queue, delay_seconds: 3600 });
  const cancelled = await api.createJob("noop", {}, { queue });
  await api.cancel(cancelled.id);
  await page.goto(`/jobs?queue=${encodeURIComponent(queue)}`);
  const status = page.getByLabel("Status", { exact: true });
  await expect(page.getByRole("group", { name: "State" }), "no second, overlapping filter").toHaveCount(0);
  const ids = () =>
    page.locator("[data-testid=jobs-table] tbody tr").evaluateAll((rows) => rows.map((r) => Number(r.dataset.jobId)));
  await expect.poll(ids).toEqual([cancelled.id, scheduled.id, available.id]);
  await status.selectOption({ label: "queued · scheduled for later" });
  await expect(page).toHaveURL(/[?&]state=scheduled(&|$)/);
  await expect.poll(ids).toEqual([scheduled.id]);
  await status.selectOption({ label: "queued" });
  await expect(page).toHaveURL(/[?&]status=queued(&|$)/);
  await expect(page, "a status clears the state").not.toHaveURL(/state=/);
  await expect.poll(ids).toEqual([scheduled.id, available.id]);
  await status.selectOption({ label: "queued · ready now" });
  await expect(page).not.toHaveURL(/status=/);
  await expect.poll(ids).toEqual([available.id]);
  await shot(page, "jobs-status-filter", { fullPage: false });
  // An address with several states still gives their list, shown as asked.
  await page.goto(`/jobs?queue=${encodeURIComponent(queue)}&state=available,scheduled`);
  await expect(status.locator("option:checked")).toHaveText("available, scheduled");
  await expect.poll(ids).toEqual([scheduled.id, available.id]);
  await page.goto(`/jobs?queue=${encodeURIComponent(queue)}&state=cancelled`);
  await expect.poll(ids).toEqual([cancelled.id]);
  for (const j of [available, scheduled]) await api.cancel(j.id);
});

test("the concurrency-key filter lists the jobs sharing the key typed, and only picked rows are acted on", async ({
  page,
  api,
}) => {
  const queue = `${api.backend.idleQueue}-keyed`;
  const key = `customer:${Date.now().toString(36)}`;
  const keyed = await api.createJobs(2, "noop", {}, { queue, concurrency_key: key });
  const other = await api.createJob("noop", {}, { queue, concurrency_key: `${key}-other` });
  await page.goto(`/jobs?queue=${encodeURIComponent(queue)}`);
  await expect(page.locator("[data-testid=jobs-table] tbody tr")).toHaveCount(3);
  await page.getByLabel("Concurrency key").fill(key);
  await page.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(new RegExp(`[?&]concurrency_key=${encodeURIComponent(key)}(&|$)`));
  const rows = page.locator("[data-testid=jobs-table] tbody tr");
  await expect(rows).toHaveCount(2);
  for (const j of keyed) await expect(page.locator(`tr[data-job-id="${j.id}"]`)).toBeVisible();
  await expect(page.locator(`tr[data-job-id="${other.id}"]`)).toHaveCount(0);
  // Every row of the page picked: no "all matching" offer (the actions' filter cannot name a key).
  await page.getByRole("checkbox", { name: "Select every job on this page" }).check();
  const bar = page.getByTestId("bulk-actions");
  await expect(bar).toContainText("2 selected.");
  await expect(bar.getByRole("button", { name: /Select all .* matching/ })).toHaveCount(0);
  await bar.getByRole("button", { name: "Cancel 2…" }).click();
  await page.getByTestId("confirm-bulk").getByRole("button", { name: "Yes, cancel 2 jobs" }).click();
  await expect(page.getByTestId("bulk-outcome")).toHaveText("Cancelled (or asked to stop) 2 jobs.");
  for (const j of keyed) expect((await api.job(j.id)).status).toBe("cancelled");
  expect((await api.job(other.id)).status, "the other key's job is untouched").toBe("queued");
  await api.cancel(other.id);
});

test("page size and jump to page: kept in the address, the rows those of the page asked for", async ({ page, api }) => {
  const queue = `${api.backend.idleQueue}-pages`;
  const jobs = await api.createJobs(55, "noop", {}, { queue });
  const newestFirst = jobs.map((j) => j.id).sort((a, b) => b - a);
  await page.goto(`/jobs?queue=${encodeURIComponent(queue)}`);
  const rows = page.locator("[data-testid=jobs-table] tbody tr");
  const pager = page.getByRole("navigation", { name: "Pages" });
  await expect(rows).toHaveCount(25);
  await page.getByLabel("Per page").selectOption("50");
  await expect(page).toHaveURL(/[?&]page_size=50(&|$)/);
  await expect(rows).toHaveCount(50);
  await expect(pager).toContainText("Page 1 of 2");
  await page.getByLabel("Per page").selectOption("25");
  await expect(pager).toContainText("Page 1 of 3");
  await page.getByLabel(/Go to page/).fill("3");
  await page.getByRole("button", { name: "Go", exact: true }).click();
  await expect(page).toHaveURL(/[?&]page=3(&|$)/);
  await expect(rows).toHaveCount(5);
  const shown = await rows.evaluateAll((r) => r.map((row) => Number(row.dataset.jobId)));
  expect(shown, "page 3 of 25 a page: the 51st to 55th newest").toEqual(newestFirst.slice(50));
  await expect(pager).toContainText("Page 3 of 3");
  // A page that does not exist is not offered.
  await page.getByLabel(/Go to page/).fill("9");
  await expect(page.getByRole("button", { name: "Go", exact: true })).toBeDisabled();
  await page.reload();
  await expect(rows).toHaveCount(5);
  await expect(pager).toContainText("Page 3 of 3");
  await shot(page, "jobs-pager", { fullPage: false });
  await api.post("jobs/actions/", { action: "cancel", filter: { queue } });
});

test("a search of two characters says text is searched from three", async ({ page }) => {
  await page.goto("/jobs");
  await page.getByLabel("Search").fill("ab");
  await page.getByLabel("Search").press("Enter");
  await expect(page).toHaveURL(/[?&]search=ab(&|$)/);
  await expect(page.getByText(/3 characters/).first()).toBeVisible();
  await expect(page.getByText("No jobs match"), "not a bare 'No jobs match'").toHaveCount(0);
});
