/**
 * The operator console's newer pages and panels: a queue's page (counts, pause and resume, the
 * concurrency limit, its workers), the throughput panel's range, every failed attempt's
 * traceback in a job's timeline, and the search in payload text.
 */
import { DESKTOP, PHONE, expect, shot, test } from "./fixtures";

test("a queue's page: from the overview, its counts, pause and resume, the limit, its workers", async ({
  page,
  api,
  backend,
}) => {
  await api.createJobs(3, "noop");
  await page.goto("/");
  const row = page.locator(`[data-testid=queues-table] tr[data-queue="${backend.queue}"]`);
  await row.getByRole("link", { name: backend.queue, exact: true }).click();
  await page.waitForURL(new RegExp(`/queues/${backend.queue}$`));
  await expect(page.getByRole("heading", { name: `Queue ${backend.queue}` })).toBeVisible();
  await expect
    .poll(async () => Number(await page.getByTestId("queue-count-succeeded").locator(".value").innerText()))
    .toBeGreaterThanOrEqual(3);
  // The run's worker process claims from this queue.
  await expect(page.getByTestId("queue-workers").locator("tbody tr").first()).toBeVisible();
  await shot(page, "queue");

  await page.getByRole("button", { name: `Pause queue ${backend.queue}` }).click();
  await expect(page.getByTestId("queue-state")).toHaveText("paused");
  expect((await api.get<{ paused: boolean }>(`queues/${backend.queue}/`)).paused).toBe(true);
  await page.getByRole("button", { name: `Resume queue ${backend.queue}` }).click();
  await expect(page.getByTestId("queue-state")).toHaveText("active");

  const limit = page.getByLabel("Concurrency limit");
  await limit.fill("4");
  await page.getByRole("button", { name: "Save" }).click();
  await expect(page.getByTestId("queue-limit")).toHaveText("now: 4 at once");
  expect((await api.get<{ concurrency_limit: number | null }>(`queues/${backend.queue}/`)).concurrency_limit).toBe(4);
  await limit.fill("");
  await page.getByRole("button", { name: "Save" }).click();
  await expect(page.getByTestId("queue-limit")).toHaveText("now: none");

  await page.getByTestId("queue-count-succeeded").click();
  await page.waitForURL(/\/jobs\?queue=.*&status=succeeded/);
  await expect(page.locator("[data-testid=jobs-table] tbody tr").first()).toBeVisible();
});

test("a queue's page at 390 px and in dark mode", async ({ page, backend }) => {
  await page.goto(`/queues/${backend.queue}`);
  await expect(page.getByTestId("queue-count-queued")).toBeVisible();
  await page.setViewportSize(PHONE);
  await shot(page, "queue-phone", { fullPage: false });
  await page.setViewportSize(DESKTOP);
  await page.emulateMedia({ colorScheme: "dark" });
  await page.getByLabel("Theme", { exact: true }).selectOption("system");
  await shot(page, "queue-dark");
  await page.goto("/queues/no-such-queue-here");
  await expect(page.getByText("No queue named no-such-queue-here")).toBeVisible();
});

test("the throughput panel's range", async ({ page, api }) => {
  await api.createJobs(2, "noop");
  await page.goto("/");
  const panel = page.getByTestId("throughput");
  await expect(panel.getByRole("heading", { name: "Throughput, jobs per minute" })).toBeVisible();
  await panel.getByRole("button", { name: "24 h" }).click();
  await expect(panel.getByRole("heading", { name: "Throughput, jobs per 30 minutes" })).toBeVisible();
  await expect(panel.getByRole("button", { name: "24 h" })).toHaveAttribute("aria-pressed", "true");
  await expect(panel.getByTestId("throughput-chart")).toHaveAttribute("aria-label", /succeeded .* in the last 24 h/);
  await panel.getByRole("button", { name: "1 h" }).click();
  await expect(panel.getByTestId("throughput-chart")).toHaveAttribute("aria-label", /in the last 1 h/);
});

test("every failed attempt's traceback is in the job's timeline", async ({ page, api }) => {
  const message = `e2e attempt failure ${test.info().testId}`;
  const { id } = await api.createJob("fail", { message }, { max_attempts: 2 });
  await api.waitForStatus(id, "failed");
  await page.goto(`/jobs/${id}`);
  const tracebacks = page.locator("[data-testid=events-timeline] details.ev-traceback");
  await expect(tracebacks).toHaveCount(2);
  await expect(tracebacks.nth(0).locator("summary")).toHaveText("Traceback of attempt 1");
  await expect(tracebacks.nth(1).locator("summary")).toHaveText("Traceback of attempt 2");
  await tracebacks.nth(0).locator("summary").click();
  await expect(tracebacks.nth(0).locator("pre")).toContainText(`RuntimeError: ${message}`);
  await shot(page, "job-attempt-tracebacks");
});

test("search finds a job by text in its payload", async ({ page, api }) => {
  const needle = `needle-${Date.now()}`;
  const { id } = await api.createJob("noop", { note: `find the ${needle} here` });
  await api.createJob("noop", { note: "nothing to see" });
  await page.goto("/jobs");
  await page.getByLabel("Search").fill(needle);
  await page.getByLabel("Search").press("Enter");
  await expect(page.locator("[data-testid=jobs-table] tbody tr")).toHaveCount(1);
  await expect(page.locator("[data-testid=jobs-table] tbody tr").first()).toContainText(`#${id}`);
});

test("every queue is in the navigation, a paused one marked, each linking to its page", async ({
  page,
  api,
  backend,
}) => {
  const queue = `${backend.idleQueue}-nav`;
  const { id } = await api.createJob("noop", {}, { queue });
  await api.post(`queues/${queue}/pause/`, {});
  try {
    await page.goto("/jobs");
    const nav = page.locator("#main-menu");
    await expect(nav.getByText("Queues", { exact: true })).toBeVisible();
    const ours = nav.getByRole("link", { name: new RegExp(`^${backend.queue}`) });
    await expect(ours).toHaveAttribute("href", new RegExp(`/queues/${backend.queue}$`));
    const paused = nav.getByRole("link", { name: new RegExp(`^${queue}`) });
    await expect(paused).toContainText("paused");
    await paused.click();
    await page.waitForURL(new RegExp(`/queues/${queue}$`));
    await expect(page.getByRole("heading", { name: `Queue ${queue}` })).toBeVisible();
    await expect(paused, "the current queue is marked in the navigation").toHaveAttribute("aria-current", "page");
    // On a phone the queues are in the Menu.
    await page.setViewportSize(PHONE);
    await expect(ours).toBeHidden();
    await page.getByRole("button", { name: "Menu" }).click();
    await expect(ours).toBeVisible();
    await shot(page, "nav-queues-phone", { fullPage: false });
    await ours.click();
    await page.waitForURL(new RegExp(`/queues/${backend.queue}$`));
    await expect(ours, "going to a page closes the menu").toBeHidden();
  } finally {
    await api.post(`queues/${queue}/resume/`, {});
    await api.cancel(id);
  }
});

test("the queues page lists every queue with its counts, paused state and limit, linked from the sidebar", async ({
  page,
  api,
  backend,
}) => {
  const queue = `${backend.idleQueue}-index`;
  const jobs = await api.createJobs(3, "noop", {}, { queue });
  await api.post(`queues/${queue}/pause/`, {});
  try {
    await page.goto("/");
    await page.locator("#main-menu").getByRole("link", { name: "Queues", exact: true }).click();
    await page.waitForURL(/\/queues$/);
    await expect(page.getByRole("heading", { name: "Queues", level: 1 })).toBeVisible();
    const table = page.getByTestId("queues-table");
    const row = table.locator(`tr[data-queue="${queue}"]`);
    await expect(row.getByTestId("queue-runnable")).toHaveText("0 3 held");
    await expect(row).toContainText("paused");
    await expect(row.locator("td[data-label=Limit]")).toHaveText("none");
    await expect(table.locator(`tr[data-queue="${backend.queue}"]`)).toBeVisible();
    await shot(page, "queues-1440");
    await page.setViewportSize(PHONE);
    await expect(row).toBeVisible();
    await shot(page, "queues-390");
    await row.getByRole("link", { name: queue }).click();
    await page.waitForURL(new RegExp(`/queues/${queue}$`));
  } finally {
    await api.post(`queues/${queue}/resume/`, {});
    for (const j of jobs) await api.cancel(j.id);
  }
});

test("the overview's chart filters are kept in the address: a reload shows the same chart", async ({
  page,
  backend,
}) => {
  await page.goto("/");
  const panel = page.getByTestId("throughput");
  await panel.getByRole("button", { name: "1 h" }).click();
  await panel.getByLabel("Queue", { exact: true }).selectOption(backend.queue);
  await expect(page).toHaveURL(new RegExp(`[?&]range=1h(&|$)`));
  await expect(page).toHaveURL(new RegExp(`[?&]queue=${backend.queue}(&|$)`));
  await page.reload();
  await expect(panel.getByRole("button", { name: "1 h" })).toHaveAttribute("aria-pressed", "true");
  await expect(panel.getByLabel("Queue", { exact: true })).toHaveValue(backend.queue);
  await expect(panel.getByTestId("throughput-chart")).toHaveAttribute(
    "aria-label",
    new RegExp(`in the last 1 h \\(queue ${backend.queue}\\)`),
  );
});

test("a traceback wraps at 390 px and its Copy button copies it whole", async ({ page, api, context }) => {
  await context.grantPermissions(["clipboard-read", "clipboard-write"]);
  const message = `e2e copy ${"a-long-word-without-spaces-".repeat(6)}${Date.now().toString(36)}`;
  const { id } = await api.createJob("fail", { permanent: true, message });
  await api.waitForStatus(id, "failed");
  await page.setViewportSize(PHONE);
  await page.goto(`/jobs/${id}`);
  const attempt = page.locator("[data-testid=events-timeline] details.ev-traceback").first();
  await attempt.locator("summary").click();
  const pre = attempt.locator("pre.traceback");
  await expect(pre).toContainText(message);
  expect(await pre.evaluate((el) => el.scrollWidth <= el.clientWidth + 1), "the traceback wraps").toBe(true);
  expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
  await attempt.getByRole("button", { name: /^Copy the traceback/ }).click();
  await expect(attempt.getByRole("button", { name: /^Copy the traceback/ })).toHaveText("Copied");
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  expect(copied).toBe(await pre.innerText());
  expect(copied).toContain(message);
});
