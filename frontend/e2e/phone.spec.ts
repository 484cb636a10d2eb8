/**
 * The tables at 390 px (a phone): every list is a column of cards, so neither the page nor any
 * table's panel scrolls sideways; each job's card shows its id, status, type and time on the
 * screen; an error is shown in full (wrapped), not cut after "RuntimeError:"; the queues'
 * Pause buttons are whole.
 */
import type { Locator, Page } from "@playwright/test";
import { PHONE, expect, shot, test } from "./fixtures";

test.use({ viewport: PHONE });

/** Nothing scrolls sideways: not the page, not a table's wrap, not a panel. */
async function noSidewaysScroll(page: Page, what: string) {
  const problems = await page.evaluate(() => {
    const out: string[] = [];
    const root = document.documentElement;
    if (root.scrollWidth > root.clientWidth + 1) out.push(`the page (${root.scrollWidth} > ${root.clientWidth})`);
    for (const el of document.querySelectorAll<HTMLElement>(".table-wrap, .panel")) {
      if (el.scrollWidth > el.clientWidth + 1)
        out.push(
          `${el.className} ${el.querySelector("table")?.dataset.testid ?? el.querySelector("h2")?.textContent ?? ""} (${el.scrollWidth} > ${el.clientWidth})`,
        );
      const r = el.getBoundingClientRect();
      if (r.width > 0 && (r.left < -1 || r.right > root.clientWidth + 1))
        out.push(`${el.className} sticks out of the window (${r.left}..${r.right})`);
    }
    return out;
  });
  expect(problems, `${what}: scrolls sideways`).toEqual([]);
}

/** The element is shown whole, inside the window's width (not cut, not off to the side). */
async function onScreen(locator: Locator, what: string) {
  await expect(locator, what).toBeVisible();
  const box = (await locator.boundingBox())!;
  expect(box.x, `${what}: its left edge is on the screen`).toBeGreaterThanOrEqual(0);
  expect(box.x + box.width, `${what}: its right edge is on the screen`).toBeLessThanOrEqual(PHONE.width);
  const cut = await locator.evaluate((el) => el.scrollWidth > el.clientWidth + 1);
  expect(cut, `${what}: its text is not cut`).toBe(false);
}

test("every table is a column of cards at 390 px: nothing scrolls sideways, each job shows its id, status, type and time", async ({
  page,
  api,
  backend,
}) => {
  const message = `card declined: insufficient funds on the account ending 4242 ${Date.now().toString(36)}`;
  const running = await api.createJob("sleep", { seconds: 120 });
  const failed = await api.createJob("fail", { permanent: true, message });
  const ok = await api.createJob("noop");
  await api.waitForStatus(running.id, "running");
  await api.waitForStatus(failed.id, "failed");
  await api.waitForStatus(ok.id, "succeeded");
  try {
    await page.goto(`/jobs?queue=${encodeURIComponent(backend.queue)}`);
    const rows = page.locator("[data-testid=jobs-table] tbody tr");
    await expect(rows.first()).toBeVisible();
    await noSidewaysScroll(page, "the jobs list");
    await shot(page, "phone-jobs");
    const count = await rows.count();
    expect(count).toBeGreaterThanOrEqual(3);
    for (let i = 0; i < count; i++) {
      const row = rows.nth(i);
      const id = await row.getAttribute("data-job-id");
      await onScreen(row.getByRole("link", { name: `#${id}` }), `job #${id}'s id`);
      await onScreen(row.getByTestId("status-badge"), `job #${id}'s status`);
      await onScreen(row.getByTestId("job-type"), `job #${id}'s type`);
      await onScreen(row.locator("td.card-time"), `job #${id}'s time`);
      await expect(row.locator("td.card-time")).toHaveText(/ ago$|now/);
    }
    // The failed job's error, whole and wrapped: past "RuntimeError:" to its last word.
    const error = page.getByTestId(`last-error-${failed.id}`);
    await onScreen(error, "the failed job's error");
    await expect(error).toContainText(message);
    expect(
      await error.evaluate((el) => el.scrollHeight <= el.clientHeight + 1),
      "the error is not clamped (it wraps in full)",
    ).toBe(true);

    await page.goto(`/failed?queue=${encodeURIComponent(backend.queue)}`);
    const failedRow = page.locator(`[data-testid=failed-table] tr[data-job-id="${failed.id}"]`);
    await expect(failedRow).toBeVisible();
    await noSidewaysScroll(page, "the failed jobs");
    await onScreen(failedRow.getByRole("link", { name: `#${failed.id}` }), "the failed job's id");
    await onScreen(failedRow.getByTestId("job-type"), "the failed job's type");
    await onScreen(failedRow.locator("td.card-time"), "when it failed");
    await onScreen(failedRow.locator("td.error-cell"), "its error");
    await expect(failedRow.locator("td.error-cell")).toContainText(message);
    await onScreen(failedRow.getByRole("button", { name: `Retry job ${failed.id}` }), "its Retry button");
    await shot(page, "phone-failed");

    // The overview's queues: every Pause button whole.
    await page.goto("/");
    const pause = page.locator("[data-testid=queues-table]").getByRole("button", { name: /^(Pause|Resume) queue / });
    await expect(pause.first()).toBeVisible();
    for (let i = 0; i < (await pause.count()); i++) {
      await onScreen(pause.nth(i), `the ${i + 1}th queue's Pause button`);
      await expect(pause.nth(i)).toHaveText(/^(Pause|Resume)$/);
    }
    await expect(page.locator("section[aria-labelledby=activity-title] tbody tr").first()).toBeVisible();
    await noSidewaysScroll(page, "the overview");
    await shot(page, "phone-overview");

    await page.goto("/schedules");
    const schedule = page.locator(`[data-testid=schedules-table] tr[data-schedule="${backend.schedule}"]`);
    await schedule.getByRole("button", { name: "Tick history" }).click();
    await expect(page.getByTestId(`ticks-${backend.schedule}`).locator("tbody tr").first()).toBeVisible({
      timeout: 20_000,
    });
    await noSidewaysScroll(page, "the schedules, a tick history unfolded");
    await onScreen(schedule.getByRole("button", { name: "Run now" }), "Run now");
    await shot(page, "phone-schedules");

    await page.goto("/workers");
    await expect(page.locator("[data-testid=workers-table] tbody tr").first()).toBeVisible();
    await noSidewaysScroll(page, "the workers");
    await shot(page, "phone-workers");

    await page.goto(`/queues/${encodeURIComponent(backend.queue)}`);
    await expect(page.locator("[data-testid=queue-workers] tbody tr").first()).toBeVisible();
    await noSidewaysScroll(page, "a queue's page");
    await shot(page, "phone-queue");
  } finally {
    await api.cancel(running.id);
  }
});
