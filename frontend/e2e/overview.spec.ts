/**
 * The overview: counts, the throughput chart, the worker process running a job, the queues
 * panel's pause and resume, the activity feed; and the theme (the system's, and the control).
 */
import { expect, shot, test } from "./fixtures";

test("the overview shows the worker running a job, its counts and the chart", async ({ page, api, backend }) => {
  const { id } = await api.createJob("sleep", { seconds: 120 });
  await api.waitForStatus(id, "running");
  await page.goto("/");
  await expect(page.getByRole("heading", { name: "Throughput, jobs per minute" })).toBeVisible();
  await expect(page.locator(".recharts-surface").first()).toBeVisible();
  await expect(
    page.locator("section[aria-labelledby=workers-title]").getByRole("link", { name: `#${id}` }),
  ).toBeVisible();
  expect(
    Number(await page.getByTestId("stat-active-workers").innerText()),
    "the worker process is counted",
  ).toBeGreaterThanOrEqual(1);
  expect(
    Number(await page.getByTestId("stat-running").innerText()),
    "the running job is counted",
  ).toBeGreaterThanOrEqual(1);
  await shot(page, "overview");
  // Pause and resume the run's queue from the Queues panel.
  const queueRow = page.locator(`[data-testid=queues-table] tr[data-queue="${backend.queue}"]`);
  await queueRow.getByRole("button", { name: `Pause queue ${backend.queue}` }).click();
  await expect(queueRow.getByText("paused", { exact: true })).toBeVisible();
  await queueRow.getByRole("button", { name: `Resume queue ${backend.queue}` }).click();
  await expect(queueRow.getByText("active", { exact: true })).toBeVisible();
  await api.cancel(id);
  await api.waitForStatus(id, "cancelled");
  // The activity feed has the job's last event.
  await expect(
    page
      .locator("section[aria-labelledby=activity-title]")
      .getByRole("link", { name: `#${id}` })
      .first(),
  ).toBeVisible();
});

test.describe("dark mode", () => {
  test.use({ colorScheme: "dark" });

  test("follows the system's preference; the control overrides it and is remembered", async ({ page }) => {
    const panelBackground = () =>
      page.evaluate(() => getComputedStyle(document.querySelector(".panel")!).backgroundColor);
    await page.goto("/");
    await expect(page.getByRole("heading", { name: "Overview" })).toBeVisible();
    await expect(page.locator(".recharts-surface").first()).toBeVisible();
    expect(await panelBackground(), "a dark system gets dark panels").toBe("rgb(23, 28, 36)");
    const theme = page.getByLabel("Theme", { exact: true });
    await theme.selectOption("light");
    expect(await panelBackground(), "Light chosen on a dark system: light panels").toBe("rgb(255, 255, 255)");
    await page.reload();
    await expect(page.getByRole("heading", { name: "Overview" })).toBeVisible();
    await expect(theme, "the theme choice is remembered").toHaveValue("light");
    expect(await panelBackground()).toBe("rgb(255, 255, 255)");
    // Back to the system's: dark again; and Dark on a light system is dark.
    await theme.selectOption("system");
    expect(await panelBackground()).toBe("rgb(23, 28, 36)");
    await page.emulateMedia({ colorScheme: "light" });
    expect(await panelBackground()).toBe("rgb(255, 255, 255)");
    await theme.selectOption("dark");
    expect(await panelBackground(), "Dark chosen on a light system: dark panels").toBe("rgb(23, 28, 36)");
  });
});
