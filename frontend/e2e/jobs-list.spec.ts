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
    "bogus",
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
